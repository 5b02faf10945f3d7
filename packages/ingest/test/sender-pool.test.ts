// Sender recovery on the pool's worker thread (replicate/sender-pool.ts) against the signer's own
// address and the recovery on the caller's thread: legacy (pre-EIP-155 and EIP-155) and typed
// transactions signed here by @ethereumjs/tx with keys of their own; a signature that does not
// recover comes back undefined (its caller recovers it again inline, for the error).
import { createFeeMarket1559Tx, createLegacyTx } from '@ethereumjs/tx';
import { Common, Mainnet } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { privateToAddress } from '@ethereumjs/util';
import { SenderPool } from '../src/replicate/sender-pool.js';
import { legacySigning, recoverSender, typedSigning } from '../src/replicate/senders.js';
import type { SigningParts } from '../src/replicate/senders.js';

const common = new Common({ chain: Mainnet, hardfork: 'cancun' });

function key(i: number): Uint8Array {
  const k = new Uint8Array(32);
  k[0] = 0x11;
  k[31] = i + 1;
  k[15] = (i * 37) & 0xff;
  return k;
}

/** 120 signed transactions of three kinds, each with its signer's address. */
function signed(): { parts: SigningParts; from: Uint8Array }[] {
  return Array.from({ length: 120 }, (_, i) => {
    const k = key(i);
    const from = privateToAddress(k);
    if (i % 3 === 2) {
      const tx = createFeeMarket1559Tx(
        { nonce: i, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n, gasLimit: 21_000n, to: from, value: BigInt(i) },
        { common },
      ).sign(k);
      return { parts: typedSigning(tx.serialize()), from };
    }
    const tx = createLegacyTx(
      { nonce: i, gasPrice: 10n, gasLimit: 21_000n, to: from, value: BigInt(i) },
      i % 3 === 0 ? { common } : { common: new Common({ chain: Mainnet, hardfork: 'tangerineWhistle' }) },
    ).sign(k);
    return { parts: legacySigning(RLP.decode(tx.serialize()) as Uint8Array[]), from };
  });
}

test('the worker recovers every sender as the signer and the caller thread do', async () => {
  const txs = signed();
  const pool = new SenderPool();
  const got = await pool.recover(txs.map((t) => t.parts));
  expect(got).toHaveLength(txs.length);
  txs.forEach((t, i) => {
    expect(Buffer.from(got[i] as Uint8Array).toString('hex')).toBe(Buffer.from(t.from).toString('hex'));
    expect(Buffer.from(recoverSender(t.parts)).toString('hex')).toBe(Buffer.from(t.from).toString('hex'));
  });
  // Two batches in flight at once come back each to its own caller.
  const [a, b] = await Promise.all([
    pool.recover(txs.slice(0, 60).map((t) => t.parts)),
    pool.recover(txs.slice(60).map((t) => t.parts)),
  ]);
  expect([...a, ...b].map((s) => Buffer.from(s as Uint8Array).toString('hex'))).toEqual(
    txs.map((t) => Buffer.from(t.from).toString('hex')),
  );
});

test('a signature that does not recover comes back undefined, the others recovered', async () => {
  const txs = signed().slice(0, 10);
  const broken: SigningParts = { ...(txs[4] as { parts: SigningParts }).parts, sig: new Uint8Array(64) };
  const parts = txs.map((t, i) => (i === 4 ? broken : t.parts));
  const got = await new SenderPool().recover(parts);
  expect(got[4]).toBeUndefined();
  expect(() => recoverSender(broken)).toThrow();
  for (const i of [0, 1, 2, 3, 5, 9])
    expect(Buffer.from(got[i] as Uint8Array).toString('hex')).toBe(
      Buffer.from((txs[i] as { from: Uint8Array }).from).toString('hex'),
    );
});
