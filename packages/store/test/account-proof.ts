// Checks an account proof the store gave against its state root with @ethereumjs/mpt's verifier.
import type { AccountProofRecord } from '@chainnode/core';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { createAccountFromRLP } from '@ethereumjs/util';

import { hex } from './random.js';

/** The proof verifies under `root`, and the account it proves (or its absence) is the record's. */
export async function expectAccountProof(root: Uint8Array, addr: Uint8Array, p: AccountProofRecord): Promise<void> {
  const value = await verifyMerkleProof(addr, p.accountProof, { root, useKeyHashing: true });
  if (value === null) {
    expect([p.nonce, p.balance]).toEqual([0n, 0n]);
    return;
  }
  const acc = createAccountFromRLP(value);
  expect([acc.nonce, acc.balance, hex(acc.codeHash), hex(acc.storageRoot)]).toEqual([
    p.nonce,
    p.balance,
    hex(p.codeHash),
    hex(p.storageHash),
  ]);
}
