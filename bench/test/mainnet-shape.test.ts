// The mainnet-shaped chain generator (bench/src/mainnet-shape/generator.ts):
// - its roots are real: the import path (importChain, what `node-cli sync --from` runs) re-executes
//   every block and checks state root, receipts root, bloom and gas used; a block whose state
//   root is altered is refused;
// - it is deterministic: two generations (in two processes) give the same bytes, with and
//   without writing a datadir;
// - the datadir it writes (one execution for the export and the store) holds exactly what the
//   import of its export writes (equal digests of every key and value, the call frames and state
//   changes recorded for traces included);
// - its blocks have the shape: 150-250 transactions and 15-30 Mgas each, as read back from the
//   export's own headers and bodies.
// Two blocks (the second executes on the state the first left, in memory and in the datadir) and
// 300 senders keep it short (the full chain has 3,000). The generations and imports run in child
// processes (mainnet-shape-child.ts), outside jest's slower module sandbox; the two generations
// run at the same time.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RLP } from '@ethereumjs/rlp';
import { EXECUTED_ONLY, digestDatadir } from '@chainnode/store';
import type { BlockGrowth, Manifest } from '../src/mainnet-shape/generator.js';

const BLOCKS = 2;
const PARAMS = { blocks: BLOCKS, senders: 300, seed: 'chainnode mainnet shape test' };
const CHILD = fileURLToPath(new URL('./mainnet-shape-child.js', import.meta.url));

/** One step of mainnet-shape-child.js; its JSON output. */
function step<T>(...args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CHILD, ...args], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${args[0]} failed: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as T);
    });
  });
}

const generate = (dir: string, datadir?: string) =>
  step<{ manifest: Manifest; growth: BlockGrowth[] }>(
    'generate',
    JSON.stringify(PARAMS),
    dir,
    ...(datadir !== undefined ? [datadir] : []),
  );

type Imported = { blocks: number; txs: number; logs: number; headHash: string } | { refused: string };

const uint = (b: Uint8Array): number => (b.length === 0 ? 0 : Number.parseInt(Buffer.from(b).toString('hex'), 16));

/** [header fields, tx count] of every block of chain.rlp. */
function readBlocks(file: string): { header: Uint8Array[]; txs: number }[] {
  const out: { header: Uint8Array[]; txs: number }[] = [];
  let rest: Uint8Array = readFileSync(file);
  while (rest.length > 0) {
    const { data, remainder } = RLP.decode(rest, true) as unknown as {
      data: [Uint8Array[], unknown[]];
      remainder: Uint8Array;
    };
    out.push({ header: data[0], txs: data[1].length });
    rest = remainder;
  }
  return out;
}

describe('mainnet-shaped chain generator', () => {
  const dirs: string[] = [];
  const tmp = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'mainnet-shape-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  let first: string;
  let written: string;
  let manifest: Manifest;

  it('gives the same bytes twice, with and without a datadir', async () => {
    first = tmp();
    const second = tmp();
    written = join(second, 'data');
    const [one, r] = await Promise.all([generate(first), generate(second, written)]);
    manifest = one.manifest;
    expect(r.growth.map((g) => g.number)).toEqual([1, 2]);
    for (const g of r.growth) expect(g.trieNodes).toBeGreaterThan(g.storageWrites);
    for (const f of ['genesis.json', 'chain.rlp', 'manifest.json']) {
      expect(readFileSync(join(second, f)).equals(readFileSync(join(first, f)))).toBe(true);
    }
  });

  it('has blocks of 150-250 transactions and 15-30 Mgas, with hot contracts', () => {
    const blocks = readBlocks(join(first, 'chain.rlp'));
    expect(blocks).toHaveLength(BLOCKS);
    for (const b of blocks) {
      expect(b.txs).toBeGreaterThanOrEqual(150);
      expect(b.txs).toBeLessThanOrEqual(250);
      const gasUsed = uint(b.header[10] as Uint8Array);
      expect(gasUsed).toBeGreaterThanOrEqual(15_000_000);
      expect(gasUsed).toBeLessThanOrEqual(30_000_000);
    }
    // Every kind of the mix occurs; the hottest token carries a large share of the logs.
    for (const k of Object.values(manifest.stats.byKind)) expect(k.txs).toBeGreaterThan(0);
    const hot = manifest.stats.logsByAddress[manifest.addresses.tokens[0] as string] ?? 0;
    expect(hot / manifest.stats.logs).toBeGreaterThan(0.1);
  });

  it('imports through the import path, which re-executes and verifies every root', async () => {
    const imported = join(tmp(), 'data');
    const s = await step<Imported>('import', first, imported);
    if ('refused' in s) throw new Error(s.refused);
    expect(s.blocks).toBe(BLOCKS);
    // The datadir the generator wrote is the one the import writes, the call frames and state
    // changes both record as they execute included; and those rows are there.
    const [a, b] = [await digestDatadir(imported), await digestDatadir(written)];
    expect(a.entries).toBeGreaterThan(1000);
    expect(b).toEqual(a);
    const without = await digestDatadir(imported, undefined, EXECUTED_ONLY);
    expect(without.entries).toBeLessThan(a.entries);
    expect(s.txs).toBe(manifest.stats.txs);
    expect(s.logs).toBe(manifest.stats.logs);
    expect(s.headHash).toBe(manifest.stats.headHash);
  });

  it("answers a transaction's trace from the rows holding it as the whole block does, and as re-executed", async () => {
    // Blocks of 150-250 transactions are cut into rows of 16: a transaction's trace reads its row,
    // a block's trace the rows joined, a store without rows re-executes the block.
    type Reads = { part: number; partBytes: number; whole: number; wholeBytes: number; raw: number };
    type Traces = {
      blocks: number;
      rows: { txs: number; callTracer: string[]; diffMode: string[]; reads: Reads[] }[];
      filter: [number, string, number, string];
    };
    const t = await step<Traces>('traces', written);
    expect(t.blocks).toBe(BLOCKS);
    for (const r of t.rows) {
      expect(r.txs).toBeGreaterThan(32);
      for (const three of [r.callTracer, r.diffMode]) {
        expect(three).toHaveLength(3);
        expect(new Set(three).size).toBe(1);
      }
      // callTracer: frames; diffMode: frames and state changes. One at a time, each transaction
      // read its rows (a sixteenth of the block's, or a little more), never the block's.
      const [calls, , diffs] = r.reads as [Reads, Reads, Reads, Reads];
      expect([calls.whole, calls.part, calls.raw]).toEqual([0, r.txs, 0]);
      expect([diffs.whole, diffs.part, diffs.raw]).toEqual([0, 2 * r.txs, 0]);
      // The block's trace read its rows joined, once.
      const blockFrames = (r.reads[1] as Reads).wholeBytes;
      expect(blockFrames).toBeGreaterThan(0);
      expect(calls.partBytes / r.txs).toBeLessThan(blockFrames / 8);
    }
    const [found, got, expected, want] = t.filter;
    expect(found).toBeGreaterThan(0);
    expect([found, got]).toEqual([expected, want]);
  });

  it('a block with another state root is refused by the import', async () => {
    const bad = tmp();
    writeFileSync(join(bad, 'genesis.json'), readFileSync(join(first, 'genesis.json')));
    // Block 1's header with its state root's last byte flipped: the body stays, so the
    // transactions root still matches and the executed root must not.
    const raw = readFileSync(join(first, 'chain.rlp'));
    const one = RLP.decode(raw, true) as unknown as { data: [Uint8Array[], ...unknown[]]; remainder: Uint8Array };
    const header = one.data[0].slice();
    const root = Uint8Array.from(header[3] as Uint8Array);
    root[31] = (root[31] as number) ^ 1;
    header[3] = root;
    writeFileSync(join(bad, 'chain.rlp'), RLP.encode([header, ...one.data.slice(1)] as never));
    const s = await step<Imported>('import', bad, join(tmp(), 'data'));
    expect(s).toEqual({ refused: expect.stringMatching(/^BlockVerificationError: /) });
  });
});
