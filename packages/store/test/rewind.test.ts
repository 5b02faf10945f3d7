// StoreWriter.rewind: the undo of orphaned blocks, derived from what they wrote. A store that
// held branch A up to block 12, then rewound to 6 and took branch B (7..14) must equal, row for
// row, a store that only ever held A(0..6) + B — except the rows keyed by an orphaned block's
// hash (headers, bodies, ...), which stay and are unreachable. Hot values carry more than
// LOG_INDEX_CHUNK logs, so the cut goes through a full posting chunk; the same holds when the
// rewind runs in a fresh writer (after a restart) and in the writer that wrote A. Both stores
// keep the ready-to-serve log rows (AddressLogsJson), so those are compared too.
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { chunksToBytes, traceRowOf } from '@chainnode/core';
import { tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { LevelChainStore, StoreWriter } from '../src/index.js';
import type { BlockInput, LogInput } from '../src/index.js';
import { openDb } from '../src/db.js';
import { HOT_ADDR, HOT_TOPIC, blockInput, legacyHeaderRlp, tagged } from './block-input.js';
import { BODY_ROW_TXS, LOG_INDEX_CHUNK, Prefix, tables } from '../src/schema/index.js';

function block(n: number, parent: Uint8Array, branch: number): BlockInput {
  const headerRlp = legacyHeaderRlp(n, parent, new Uint8Array(256), 1_000 + n * 12 + branch);
  const hash = keccak256(headerRlp);
  // 3 txs (18 in block 9 of branch A: two rows of recorded frames to cut); the first 3 each with
  // 100 logs on the hot address/topic and a branch-specific address.
  const logs: LogInput[][] = [];
  const txs: Uint8Array[] = [];
  for (let t = 0; t < (branch === 0 && n === 9 ? 18 : 3); t++) {
    txs.push(RLP.encode([n * 100 + t, branch + 1, 21000, new Uint8Array(20), 0, new Uint8Array(0), 27, 1, 1]));
    const txLogs: LogInput[] = [];
    for (let i = 0; i < (t < 3 ? 100 : 0); i++)
      txLogs.push({
        address: i % 2 === 0 ? HOT_ADDR : tagged(0xb0 + branch, n, 20),
        topics: [HOT_TOPIC, tagged(0x70, i % 7, 32)],
        data: Uint8Array.of(n, t, i),
      });
    logs.push(txLogs);
  }
  // Branch B repeats one tx of A at the same height (its lookup must survive the undo).
  if (branch === 1 && n === 8)
    txs[0] = RLP.encode([n * 100, 1, 21000, new Uint8Array(20), 0, new Uint8Array(0), 27, 1, 1]);
  const txHashes = txs.map((t) => keccak256(t));
  const input = blockInput({ number: n, hash, headerRlp, txs, txHashes, logs, logsBloom: new Uint8Array(256) });
  // Recorded frames naming, in each transaction, a contract every block calls, a branch's own
  // internal callee, and the transaction's sender (already in Appearances).
  if (n > 0)
    input.frames = {
      rows: Array.from({ length: traceRowOf(txs.length - 1) + 1 }, (_, row) => Uint8Array.of(n, branch, row)),
      changes: Array.from({ length: traceRowOf(txs.length - 1) + 1 }, (_, row) => Uint8Array.of(n, branch, row, 1)),
      bloom: new Uint8Array(512),
      txAddresses: txs.map(() => [new Uint8Array(20), INNER, tagged(0xc0 + branch, n, 20)]),
    };
  return input;
}

/** A contract only recorded frames name, called in every transaction. */
const INNER = tagged(0xcc, 0, 20);

function chain(branchAt: number, to: number, branch: number, base: BlockInput[]): BlockInput[] {
  const out = base.slice(0, branchAt + 1);
  for (let n = branchAt + 1; n <= to; n++) out.push(block(n, (out[n - 1] as BlockInput).hash, branch));
  return out;
}

const genesis = block(0, new Uint8Array(32), 0);
const A = chain(0, 12, 0, [genesis]);
const B = chain(6, 14, 1, A);

async function write(dir: string, blocks: BlockInput[], perFlush: number): Promise<void> {
  const w = await StoreWriter.open(dir);
  try {
    if (w.storedGenesisHash() === undefined) await w.writeGenesis({ chainConfig: { chainId: 1 }, block: genesis });
    const from = Number((w.durableHead()?.number ?? 0n) + 1n);
    for (let n = from; n < blocks.length; n++) {
      w.addPreExecutedBlock(blocks[n] as BlockInput, { logsJson: true });
      if (n % perFlush === 0) await w.flush();
    }
    await w.flush();
  } finally {
    await w.close();
  }
}

async function rows(dir: string): Promise<Map<string, string>> {
  const db = await openDb(dir, { create: false });
  const out = new Map<string, string>();
  try {
    for await (const [k, v] of db.iterator()) out.set(Buffer.from(k).toString('hex'), Buffer.from(v).toString('hex'));
  } finally {
    await db.close();
  }
  return out;
}

const OPTS = { limit: 100_000, deadline: Date.now() + 600_000 };
const HASH_KEYED = [
  Prefix.HashToNumber,
  Prefix.Headers,
  Prefix.Bodies,
  Prefix.Receipts,
  Prefix.TotalDifficulty,
  Prefix.Senders,
];

describe('StoreWriter.rewind', () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await tempDir('rewind-');
  });
  afterAll(() => tmp.cleanup());

  test('the cut goes through a full posting chunk of the hot topic (every log carries it)', () => {
    const cut = 7 * 300; // log ids of blocks 0..6
    const chunkEnd = Math.ceil(cut / LOG_INDEX_CHUNK) * LOG_INDEX_CHUNK;
    expect(cut % LOG_INDEX_CHUNK).not.toBe(0);
    expect(13 * 300).toBeGreaterThan(chunkEnd); // A filled that chunk before the rewind
  });

  for (const mode of ['same writer', 'reopened writer'] as const) {
    test(`rewind + new branch equals a store that only held the new branch (${mode})`, async () => {
      const reorged = join(tmp.dir, `reorged-${mode.replace(' ', '-')}`);
      const direct = join(tmp.dir, `direct-${mode.replace(' ', '-')}`);
      await write(direct, B, 3);
      const w0 = await StoreWriter.open(reorged);
      await w0.writeGenesis({ chainConfig: { chainId: 1 }, block: genesis });
      for (let n = 1; n <= 12; n++) {
        w0.addPreExecutedBlock(A[n] as BlockInput, { logsJson: true });
        if (n % 4 === 0) await w0.flush();
      }
      await w0.flush();
      let w = w0;
      if (mode === 'reopened writer') {
        await w0.close();
        w = await StoreWriter.open(reorged);
      }
      try {
        const removed = await w.rewind(6n);
        expect(removed.map((b) => b.number)).toEqual([7n, 8n, 9n, 10n, 11n, 12n]);
        expect(removed.map((b) => Buffer.from(b.hash).toString('hex'))).toEqual(
          A.slice(7).map((b) => Buffer.from(b.hash).toString('hex')),
        );
        expect(removed[0]?.logs.length).toBe(300);
        expect(removed[0]?.logs[299]?.logIndex).toBe(299);
        expect(
          Buffer.from(removed[0]?.logs[0]?.transactionHash ?? []).equals(
            Buffer.from((A[7] as BlockInput).txHashes[0] as Uint8Array),
          ),
        ).toBe(true);
        // Nothing is visible before the flush: the head is still A's.
        expect(w.durableHead()?.number).toBe(12n);
        for (let n = 7; n <= 14; n++) w.addPreExecutedBlock(B[n] as BlockInput, { logsJson: true });
        await w.flush();
        expect(w.durableHead()?.number).toBe(14n);
      } finally {
        await w.close();
      }
      const got = await rows(reorged);
      const want = await rows(direct);
      const orphans = new Set(A.slice(7).map((b) => Buffer.from(b.hash).toString('hex')));
      const isOrphanRow = (k: string) =>
        ([...HASH_KEYED, Prefix.BodyTxs] as number[]).includes(parseInt(k.slice(0, 2), 16)) &&
        orphans.has(k.slice(2, 66));
      const leftovers = [...got.keys()].filter(isOrphanRow);
      // One row each a block, and a BodyTxs row per 16 of its transactions.
      const bodyRows = A.slice(7).reduce((n, b) => n + Math.ceil(b.txHashes.length / BODY_ROW_TXS), 0);
      expect(bodyRows).toBeGreaterThan(0);
      expect(leftovers.length).toBe(6 * HASH_KEYED.length + bodyRows);
      for (const k of leftovers) got.delete(k);
      expect(got.size).toBe(want.size);
      for (const [k, v] of want) expect([k, got.get(k)]).toEqual([k, v]);

      // Reads: orphaned blocks and their txs are gone, the repeated tx points at B's block.
      const store = await LevelChainStore.open(reorged);
      try {
        expect(await store.block((A[9] as BlockInput).hash)).toBeUndefined();
        expect(await store.transaction((A[9] as BlockInput).txHashes[1] as Uint8Array)).toBeUndefined();
        const repeated = await store.transaction((B[8] as BlockInput).txHashes[0] as Uint8Array);
        expect(repeated?.blockNumber).toBe(8n);
        // By position (no lookup by hash): B's transactions; none past B's three at block 9.
        const at = await store.transactionAt(9n, 1);
        expect(Buffer.from(at?.tx.hash ?? []).equals(Buffer.from((B[9] as BlockInput).txHashes[1] as Uint8Array))).toBe(
          true,
        );
        expect(at?.transactionIndex).toBe(1);
        expect(await store.transactionAt(9n, 17)).toBeUndefined();
        expect((await store.transactionAt(8n, 0))?.tx).toEqual(repeated?.tx);
        expect(Buffer.from(repeated?.blockHash ?? []).equals(Buffer.from((B[8] as BlockInput).hash))).toBe(true);
        const all = await store.logs({ fromBlock: 0n, toBlock: 14n, addresses: [HOT_ADDR], topics: [] }, OPTS);
        if (all.kind !== 'ok') throw new Error(all.kind);
        expect(all.logs.length).toBe(15 * 150); // genesis carries logs too in this synthetic chain
        for (const l of all.logs) {
          const b = B[Number(l.blockNumber)] as BlockInput;
          expect(Buffer.from(l.blockHash).equals(Buffer.from(b.hash))).toBe(true);
        }
        const orphanAddr = await store.logs(
          { fromBlock: 0n, toBlock: 14n, addresses: [tagged(0xb0, 9, 20)], topics: [] },
          OPTS,
        );
        expect(orphanAddr.kind === 'ok' ? orphanAddr.logs.length : -1).toBe(0);
        // The address-appearance index (compared row for row above, and read): B's blocks only.
        expect([...want.keys()].some((k) => k.startsWith(Prefix.Appearances.toString(16)))).toBe(true);
        const page = async (address: Uint8Array) =>
          (await store.appearances({ address, direction: 'after', block: undefined, count: 1000 }))?.positions.map(
            (p) => `${p.number}:${p.index}`,
          );
        expect(await page(HOT_ADDR)).toEqual(B.flatMap((_, n) => [0, 1, 2].map((i) => `${n}:${i}`)));
        expect(await page(tagged(0xb0, 9, 20))).toEqual([]);
        expect(await page(tagged(0xb1, 9, 20))).toEqual(['9:0', '9:1', '9:2']);
        // Its call-frame part (FrameAppearances), cut the same way; the sender is not posted twice.
        expect([...want.keys()].some((k) => k.startsWith(Prefix.FrameAppearances.toString(16)))).toBe(true);
        expect(await page(INNER)).toEqual(B.slice(1).flatMap((_, k) => [0, 1, 2].map((i) => `${k + 1}:${i}`)));
        expect(await page(tagged(0xc0, 9, 20))).toEqual([]);
        expect(await page(tagged(0xc1, 9, 20))).toEqual(['9:0', '9:1', '9:2']);
        const range = await store.appearanceRange(tagged(0xc1, 9, 20), 8n, 9n);
        expect(range?.positions.map((p) => `${p.number}:${p.index}`)).toEqual(['9:0', '9:1', '9:2']);
        expect(range?.framesFrom).toBe(0n);
        expect((await store.appearanceRange(INNER, 3n, 4n))?.positions.length).toBe(6);
        // The blocks whose recorded frames the index holds (trace_filter's index-only part): B's,
        // each once, A's cut with their blocks.
        expect(await store.frameIndexedBlocks(0n, 14n)).toEqual(B.slice(1).map((_, k) => BigInt(k + 1)));
        expect(await store.frameIndexedBlocks(8n, 9n)).toEqual([8n, 9n]);
        // The ready-to-serve rows (AddressLogsJson) tell the same: B's logs only.
        const text = await store.logsText({ fromBlock: 0n, toBlock: 14n, addresses: [HOT_ADDR], topics: [] }, OPTS);
        if (text?.kind !== 'ok') throw new Error(`logsText: ${JSON.stringify(text)}`);
        const parsed = JSON.parse(chunksToBytes(text.ascii).toString('latin1')) as {
          blockNumber: string;
          blockHash: string;
          logIndex: string;
          data: string;
        }[];
        expect(parsed.map((l) => [l.blockNumber, l.blockHash, l.logIndex, l.data])).toEqual(
          all.logs.map((l) => [
            `0x${l.blockNumber.toString(16)}`,
            `0x${Buffer.from(l.blockHash).toString('hex')}`,
            `0x${l.logIndex.toString(16)}`,
            `0x${Buffer.from(l.data).toString('hex')}`,
          ]),
        );
        const none = await store.logsText(
          { fromBlock: 0n, toBlock: 14n, addresses: [tagged(0xb0, 9, 20)], topics: [] },
          OPTS,
        );
        expect(none?.kind === 'ok' ? [chunksToBytes(none.ascii).toString('latin1'), none.count] : none).toEqual([
          '[]',
          0,
        ]);
      } finally {
        await store.close();
      }
    });
  }

  test("reads one transaction's trace rows alone, a block's joined, and an earlier release's one row a block", async () => {
    const dir = join(tmp.dir, 'trace-rows');
    // Rows led by their block's hash, as the trace module writes them (block 9 of A: 18
    // transactions, two rows each); block 10's frames as an earlier release wrote them, one row
    // under the block number alone.
    const led = (b: BlockInput): BlockInput => {
      const rows = (b.frames?.rows ?? []).map((r) => Uint8Array.from([...b.hash, ...r]));
      const changes = (b.frames?.changes ?? []).map((r) => Uint8Array.from([...b.hash, ...r]));
      return b.frames === undefined ? b : { ...b, frames: { ...b.frames, rows, changes } };
    };
    await write(dir, A.slice(0, 11).map(led), 4);
    const [nine, ten] = [led(A[9] as BlockInput), led(A[10] as BlockInput)];
    const old = Uint8Array.from([...ten.hash, 1, 3, 0xee]);
    const db = await openDb(dir, { create: false });
    try {
      await db.del(tables.txFrames.key({ number: 10n, row: 0 }));
      await db.put(tables.txFrames.key({ number: 10n }), old);
    } finally {
      await db.close();
    }
    const store = await LevelChainStore.open(dir);
    try {
      const [r0, r1] = nine.frames?.rows ?? [];
      const [c0, c1] = nine.frames?.changes ?? [];
      const hex = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString('hex'));
      for (const i of [0, 15]) expect(hex(await store.txFrames(nine.hash, i))).toBe(hex(r0));
      for (const i of [16, 17]) expect(hex(await store.txFrames(nine.hash, i))).toBe(hex(r1));
      expect(hex(await store.txStateDiffs(nine.hash, 17))).toBe(hex(c1));
      // Asked again: the same (kept) rows.
      expect(hex(await store.txFrames(nine.hash, 16))).toBe(hex(r1));
      expect(hex(await store.txFrames(nine.hash))).toBe(hex(Buffer.concat([r0 as Uint8Array, r1 as Uint8Array])));
      expect(hex(await store.txStateDiffs(nine.hash))).toBe(hex(Buffer.concat([c0 as Uint8Array, c1 as Uint8Array])));
      // Once the block's rows are kept, a transaction's read hands them out.
      expect(hex(await store.txFrames(nine.hash, 3))).toBe(hex(Buffer.concat([r0 as Uint8Array, r1 as Uint8Array])));
      for (const i of [undefined, 0, 2]) expect(hex(await store.txFrames(ten.hash, i))).toBe(hex(old));
      // Not a canonical block: nothing.
      expect(await store.txFrames((B[9] as BlockInput).hash, 0)).toBeUndefined();
      expect(await store.txFrames(new Uint8Array(32))).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
