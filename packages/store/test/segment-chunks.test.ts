// The sealed segments' chunk codec (logs/segment-chunks.ts): chunks are compressed without their
// logs' transaction and block hashes, and decoding writes them back from the block's hashes. The
// texts here are core's log JSON of random logs (what the writer stores), and the hashes given
// back come from the model, never from the stripped text.
import { randomBytes } from 'node:crypto';
import { LogJsonWriter } from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import { packSpan, restoreHashes, stripHashes, unpackStrippedChunk } from '../src/logs/segment-chunks.js';
import type { BlockHashes } from '../src/logs/segment-chunks.js';

/** Logs of `blocks` consecutive blocks from `first`, 0-4 transactions each, 1-3 logs each. */
function model(
  first: number,
  blocks: number,
): { text: Buffer; texts: Buffer[]; hashes: Map<bigint, BlockHashes>; logs: number } {
  const hashes = new Map<bigint, BlockHashes>();
  const texts: Buffer[] = [];
  let logs = 0;
  for (let n = first; n < first + blocks; n++) {
    const txs = n % 5;
    const block: BlockHashes = { hash: randomBytes(32), txHashes: randomBytes(32 * Math.max(txs, 1)) };
    hashes.set(BigInt(n), block);
    const w = new LogJsonWriter();
    const parts: string[] = [];
    let logIndex = 0;
    for (let tx = 0; tx < txs; tx++) {
      for (let k = 0; k <= (n + tx) % 3; k++) {
        const log: LogRecord = {
          address: randomBytes(20),
          topics: Array.from({ length: (n + k) % 5 }, () => randomBytes(32)),
          data: randomBytes((n * 7 + k) % 70),
          blockNumber: BigInt(n),
          blockHash: block.hash,
          blockTimestamp: BigInt(1_700_000_000 + n * 12),
          transactionHash: block.txHashes.subarray(tx * 32, tx * 32 + 32),
          transactionIndex: tx,
          logIndex: logIndex++,
        };
        parts.push(w.write(log));
        logs++;
      }
    }
    if (parts.length > 0) texts.push(Buffer.from(parts.join(','), 'latin1'));
  }
  return { text: Buffer.from(texts.map((t) => t.toString('latin1')).join(','), 'latin1'), texts, hashes, logs };
}

const lookup =
  (hashes: Map<bigint, BlockHashes>) =>
  (n: bigint): BlockHashes => {
    const b = hashes.get(n);
    if (b === undefined) throw new Error(`no block ${n}`);
    return b;
  };

describe('segment chunks without their hashes', () => {
  test('stripping takes out 64 hex digits per transaction and block hash; restoring gives the text back byte for byte', () => {
    const { text, hashes, logs } = model(1_000_000, 40);
    expect(logs).toBeGreaterThan(50);
    const stripped = stripHashes(text);
    expect(stripped.length).toBe(text.length - 128 * logs);
    expect(stripped.toString('latin1')).not.toMatch(/"(transactionHash|blockHash)":"0x[0-9a-f]/);
    expect(restoreHashes(stripped, text.length, lookup(hashes)).equals(text)).toBe(true);
    // Every hash written back is the model's: the block's, and the transaction's by its index.
    const parsed = JSON.parse(`[${restoreHashes(stripped, text.length, lookup(hashes)).toString('latin1')}]`) as {
      blockNumber: string;
      blockHash: string;
      transactionHash: string;
      transactionIndex: string;
    }[];
    for (const l of parsed) {
      const b = hashes.get(BigInt(l.blockNumber)) as BlockHashes;
      const tx = Number(l.transactionIndex);
      expect(l.blockHash).toBe(`0x${Buffer.from(b.hash).toString('hex')}`);
      expect(l.transactionHash).toBe(`0x${Buffer.from(b.txHashes.subarray(tx * 32, tx * 32 + 32)).toString('hex')}`);
    }
  });

  test('a text without logs is itself', () => {
    expect(stripHashes(Buffer.alloc(0)).length).toBe(0);
    expect(
      restoreHashes(Buffer.alloc(0), 0, () => ({ hash: new Uint8Array(32), txHashes: new Uint8Array(0) })).length,
    ).toBe(0);
  });

  test('packed spans decode chunk by chunk to the texts sealed, with the hashes of the blocks the chunks hold', async () => {
    const { texts, hashes } = model(77, 600);
    const textEnds: number[] = [];
    let end = -1;
    for (const t of texts) textEnds.push((end += t.length + 1));
    const joined = Buffer.from(texts.map((t) => t.toString('latin1')).join(','), 'latin1');
    const packed = await packSpan(joined, textEnds);
    expect(packed.chunks.length).toBeGreaterThan(2);
    let packedStart = 0;
    let textStart = 0;
    const out: string[] = [];
    packed.chunks.forEach((c, j) => {
      const last = (j + 1 < packed.chunks.length ? (packed.chunks[j + 1]?.firstEntry as number) : texts.length) - 1;
      const length = (textEnds[last] as number) - textStart;
      const seen = new Set<bigint>();
      const chunk = unpackStrippedChunk(packed.bytes.subarray(packedStart, c.packedEnd), length, (n) => {
        seen.add(n);
        return lookup(hashes)(n);
      });
      out.push(chunk.toString('latin1'));
      expect(seen.size).toBeGreaterThan(0);
      packedStart = c.packedEnd;
      textStart = (textEnds[last] as number) + 1;
    });
    expect(out.join(',')).toBe(joined.toString('latin1'));
  });

  test('a damaged or foreign text, a transaction the block lacks, or another length is an error, never a wrong text', () => {
    const { text, hashes } = model(5, 20);
    const stripped = stripHashes(text);
    const get = lookup(hashes);
    expect(() => restoreHashes(stripped, text.length + 1, get)).toThrow(/decoded to/);
    expect(() => restoreHashes(stripped, text.length - 1, get)).toThrow(/more than its index/);
    // The block's hashes as another block had them: fewer transactions than its logs name.
    expect(() =>
      restoreHashes(stripped, text.length, () => ({ hash: new Uint8Array(32), txHashes: new Uint8Array(32) })),
    ).toThrow(/a log of transaction/);
    // The unstripped text is not a stripped one.
    expect(() => restoreHashes(text, text.length, get)).toThrow(/malformed/);
    // A cut text.
    const cut = stripped.subarray(0, stripped.indexOf('"transactionIndex"') + 5);
    expect(() => restoreHashes(cut, text.length, get)).toThrow(/malformed/);
    // A hash of another length is not stripped.
    expect(() => stripHashes(Buffer.from('{"transactionHash":"0x1234","blockHash":"0x"}', 'latin1'))).toThrow(
      /32 bytes/,
    );
  });
});
