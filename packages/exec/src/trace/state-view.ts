// The state a tracer reads (hooks.ts StateView), over an @ethereumjs state manager as the
// execution has it at the moment: the re-execution's StoreStateManager or the import's; or the
// state after a transaction as its recorded changes hold it.
import type { StateManagerInterface } from '@ethereumjs/common';
import { Address, KECCAK256_NULL, setLengthLeft } from '@ethereumjs/util';
import { toData } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { ChangedAccount, StateView, TxChanges } from './hooks.js';

export function stateView(sm: Pick<StateManagerInterface, 'getAccount' | 'getCode' | 'getStorage'>): StateView {
  const account = (a: Bytes) => sm.getAccount(new Address(a));
  return {
    balance: async (a) => (await account(a))?.balance ?? 0n,
    nonce: async (a) => (await account(a))?.nonce ?? 0n,
    code: (a) => sm.getCode(new Address(a)),
    codeHash: async (a) => (await account(a))?.codeHash,
    storage: async (a, slot) => setLengthLeft(await sm.getStorage(new Address(a), slot), 32),
  };
}

/**
 * The state after a transaction, of the accounts and slots its recorded changes hold (what a
 * tracer fed them reads at onTxEnd); any other read is refused.
 */
export function changedState(c: TxChanges): StateView {
  const accounts = new Map<string, { a: ChangedAccount; slots: Map<string, Bytes> }>();
  for (const a of c.accounts)
    accounts.set(toData(a.address), { a, slots: new Map(a.slots.map(([slot, , after]) => [toData(slot), after])) });
  const get = (address: Bytes) => {
    const x = accounts.get(toData(address));
    if (x === undefined) throw new Error(`recorded changes: ${toData(address)} is not recorded`);
    return x;
  };
  return {
    balance: async (a) => get(a).a.post.balance,
    nonce: async (a) => get(a).a.post.nonce,
    codeHash: async (a) => get(a).a.post.codeHash ?? KECCAK256_NULL,
    code: async (a) => {
      const h = get(a).a.post.codeHash;
      return h === undefined ? new Uint8Array() : c.code(h);
    },
    storage: async (a, slot) => {
      const v = get(a).slots.get(toData(slot));
      if (v === undefined) throw new Error(`recorded changes: slot ${toData(slot)} of ${toData(a)} is not recorded`);
      return v;
    },
  };
}
