// OP-stack from Isthmus: the header's withdrawalsRoot is the L2ToL1MessagePasser's storage root in
// the block's post-state, checked when the replica's overlay commits (op-geth's ValidateState).
import { createMPT } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP, MapDB, bytesToHex, hexToBytes, setLengthLeft } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/core';
import type { StoreWriter } from '@chainnode/store';
import { BlockVerificationError } from '../src/errors.js';
import { claimWithdrawalsRoot } from '../src/replicate/op-stack.js';
import { StateMismatch, StateOverlay } from '../src/replicate/state.js';

const PASSER = keccak256(hexToBytes('0x4200000000000000000000000000000000000016'));

function emptyState(): StateOverlay {
  const db = new MapDB<string, Uint8Array>();
  const trieDb = {
    getNodeSync: (h: Uint8Array) => db._database.get(bytesToHex(h)),
    putNodeSync: (h: Uint8Array, e: Uint8Array) => db._database.set(bytesToHex(h), e),
    put: async () => undefined,
  } as unknown as StoreWriter['trieDb'];
  return new StateOverlay(trieDb, KECCAK256_RLP);
}

test('an absent message passer: the empty trie root, and nothing else', async () => {
  await claimWithdrawalsRoot(emptyState(), 1n, KECCAK256_RLP);
  await expect(claimWithdrawalsRoot(emptyState(), 1n, new Uint8Array(32))).rejects.toThrow(BlockVerificationError);
});

test("a message passer the block writes: its storage root after the block's changes", async () => {
  const storage = await createMPT({ useKeyHashing: true });
  await storage.put(setLengthLeft(Uint8Array.of(1), 32), RLP.encode(Uint8Array.of(7)));
  const block = async (withdrawalsRoot: Uint8Array): Promise<Uint8Array> => {
    const o = emptyState();
    await o.setFields(PASSER, { nonce: 0n });
    await o.setStorage(PASSER, keccak256(setLengthLeft(Uint8Array.of(1), 32)), Uint8Array.of(7));
    await claimWithdrawalsRoot(o, 1n, withdrawalsRoot);
    return o.commit();
  };
  await expect(block(storage.root())).resolves.toBeInstanceOf(Uint8Array);
  await expect(block(KECCAK256_RLP)).rejects.toThrow(StateMismatch);
});
