// The state a tracer reads (hooks.ts StateView), over an @ethereumjs state manager as the
// execution has it at the moment: the re-execution's StoreStateManager or the import's.
import type { StateManagerInterface } from '@ethereumjs/common';
import { Address, setLengthLeft } from '@ethereumjs/util';
import type { Bytes } from '@chainnode/core';
import type { StateView } from './hooks.js';

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
