// chainnode_getStateDiff's answer (docs/json-rpc.md, "Replication"): a block's whole state change.
import { bytesToBigInt, toData, toQuantity } from '@chainnode/core';
import type { Hex, StateDiffRecord } from '@chainnode/core';

export interface JsonStateDiffAccount {
  /** keccak256 of the address. */
  key: Hex;
  /** The new account leaf; null when it was removed. */
  account: { nonce: Hex; balance: Hex; storageRoot: Hex; codeHash: Hex } | null;
  /** Only when codeHash changed and is not the empty code's. */
  code?: Hex;
  /** [keccak256(slot), value (quantity) or null (removed)], by key. */
  storage: [Hex, Hex | null][];
}

export interface JsonStateDiff {
  blockHash: Hex;
  number: Hex;
  parentStateRoot: Hex;
  stateRoot: Hex;
  accounts: JsonStateDiffAccount[];
}

export function formatStateDiff(
  block: { hash: Uint8Array; number: bigint; parentStateRoot: Uint8Array; stateRoot: Uint8Array },
  diff: StateDiffRecord,
): JsonStateDiff {
  return {
    blockHash: toData(block.hash),
    number: toQuantity(block.number),
    parentStateRoot: toData(block.parentStateRoot),
    stateRoot: toData(block.stateRoot),
    accounts: diff.accounts.map((a) => {
      const account =
        a.account === null
          ? null
          : {
              nonce: toQuantity(a.account.nonce),
              balance: toQuantity(a.account.balance),
              storageRoot: toData(a.account.storageRoot),
              codeHash: toData(a.account.codeHash),
            };
      const storage = a.storage.map(([k, v]): [Hex, Hex | null] => [
        toData(k),
        v === null ? null : toQuantity(bytesToBigInt(v)),
      ]);
      // Members in the documented order: key, account, code (when present), storage.
      return a.code === undefined
        ? { key: toData(a.key), account, storage }
        : { key: toData(a.key), account, code: toData(a.code), storage };
    }),
  };
}
