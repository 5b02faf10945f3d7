// Import behaviour seen from outside: the external chain imports completely; a tampered block
// stops the import naming block and field and leaves the previous head; genesis mismatch and a
// datadir in use are refused with one line; repeated SIGKILL + resume equals an uninterrupted run
// (on a prefix of the fixture chain).
import { spawn } from 'node:child_process';
import { copyFile, cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { digestDatadir, openChainStore } from '@chainnode/store';
import { chainDir, cliBin, preparedDatadir, runCli, sharedChainsDir, tempDir } from '@chainnode/testkit';
import { BlockVerificationError, ChainMismatchError, importChain } from '../src/index.js';

const HEAD = 'd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7';
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

type Nested = Uint8Array | Nested[];

/** The blocks of a chain.rlp as decoded RLP values. */
async function readBlocks(path: string): Promise<Nested[][]> {
  let rest: Uint8Array = await readFile(path);
  const out: Nested[][] = [];
  while (rest.length > 0) {
    const { data, remainder } = RLP.decode(rest, true);
    out.push(data as Nested[]);
    rest = remainder;
  }
  return out;
}

/** A copy of `src` whose chain.rlp has block `number` rewritten by `edit`. */
async function tamperedChain(
  src: string,
  dir: string,
  number: number,
  edit: (block: Nested[]) => void,
): Promise<string> {
  const blocks = await readBlocks(join(src, 'chain.rlp'));
  const target = blocks[number - 1] as Nested[];
  edit(target);
  await mkdir(dir, { recursive: true });
  await copyFile(join(src, 'genesis.json'), join(dir, 'genesis.json'));
  await writeFile(join(dir, 'chain.rlp'), Buffer.concat(blocks.map((b) => RLP.encode(b as never))));
  return dir;
}

const chains = sharedChainsDir();
const d = chains === undefined ? describe.skip : describe;
if (chains === undefined) console.log('skipped: ../shared/chains is absent, cannot import the external chain');

d('import of ../shared/chains/execution-apis', () => {
  const src = join(chains ?? '/nonexistent', 'execution-apis');
  const temps: (() => Promise<void>)[] = [];
  const temp = async () => {
    const t = await tempDir('ingest-test-');
    temps.push(t.cleanup);
    return t.dir;
  };
  afterAll(async () => {
    for (const c of temps) await c();
  });
  // The blocks before a tampered one, imported once per block number (the import from scratch is
  // the first test's); each case resumes a copy of it at the tampered block.
  const importedTo = new Map<number, Promise<string>>();
  const importedCopy = async (head: number, datadir: string): Promise<void> => {
    if (!importedTo.has(head))
      importedTo.set(
        head,
        temp().then(async (dir) => {
          await importChain({ from: src, datadir: join(dir, 'data'), to: BigInt(head) });
          return join(dir, 'data');
        }),
      );
    await cp(await importedTo.get(head)!, datadir, { recursive: true });
  };

  test('imports completely: head hash and counts; re-running is a no-op; --to then continue', async () => {
    const datadir = join(await temp(), 'data');
    const partial = await importChain({ from: src, datadir, to: 20n });
    expect(partial.head.number).toBe(20n);
    const full = await importChain({ from: src, datadir });
    expect(full.startNumber).toBe(20n);
    expect(full.blocks).toBe(34);
    expect(hex(full.head.hash)).toBe(HEAD);
    const again = await importChain({ from: src, datadir });
    expect(again.blocks).toBe(0);
    const store = await openChainStore(datadir);
    try {
      let txs = 0;
      let uncles = 0;
      for (let n = 0n; n <= 54n; n++) {
        const b = await store.block((await store.canonicalHash(n)) as Uint8Array);
        txs += b?.transactions.length ?? 0;
        uncles += b?.uncleHashes.length ?? 0;
      }
      expect([txs, uncles]).toEqual([249, 18]);
      expect(hex((await store.head()).hash)).toBe(HEAD);
    } finally {
      await store.close();
    }
    // Resumed in two runs, the store equals the one-run import byte for byte.
    expect(await digestDatadir(datadir)).toEqual(await digestDatadir(await preparedDatadir('execution-apis')));
  });

  test.each([
    ['stateRoot', 12, (b: Nested[]) => ((b[0] as Uint8Array[])[3] = new Uint8Array(32).fill(7))],
    ['receiptsRoot', 12, (b: Nested[]) => ((b[0] as Uint8Array[])[5] = new Uint8Array(32).fill(7))],
    ['gasUsed', 12, (b: Nested[]) => ((b[0] as Uint8Array[])[10] = Uint8Array.of(1))],
    ['uncleHash (sha3Uncles)', 12, (b: Nested[]) => ((b[2] as Nested[]).length = 0)],
    // value of the first (legacy) tx of block 1 changed: its transactions root no longer matches
    ['transactionsRoot', 1, (b: Nested[]) => (((b[1] as Nested[])[0] as Uint8Array[])[4] = Uint8Array.of(9))],
  ])('a block with a wrong %s stops the import there and keeps the blocks before it', async (field, number, edit) => {
    const dir = await temp();
    const chain = await tamperedChain(src, join(dir, 'chain'), number, edit);
    const datadir = join(dir, 'data');
    if (number > 1) await importedCopy(number - 1, datadir);
    const err = await importChain({ from: chain, datadir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockVerificationError);
    const v = err as BlockVerificationError;
    expect([v.blockNumber, v.field]).toEqual([BigInt(number), field]);
    expect(v.message).toContain(`block ${number}: ${field} mismatch`);
    expect(v.expected).not.toBe(v.computed);
    const store = await openChainStore(datadir);
    try {
      expect((await store.head()).number).toBe(BigInt(number - 1));
      expect(await store.canonicalHash(BigInt(number))).toBeUndefined();
    } finally {
      await store.close();
    }
    // Through the CLI: one line, exit 1.
    const r = await runCli(['sync', '--from', chain, '--datadir', datadir]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n').pop()).toMatch(
      new RegExp(
        `^node-cli: import stopped: block ${number}: .* mismatch: block says (0x[0-9a-f]+|\\d+), computed (0x[0-9a-f]+|\\d+)$`,
      ),
    );
  });

  test('a chain with a different genesis is refused with a clear message', async () => {
    const dir = await temp();
    const datadir = join(dir, 'data');
    await importChain({ from: src, datadir, to: 3n });
    const other = join(dir, 'other');
    await mkdir(other);
    const g = JSON.parse(await readFile(join(src, 'genesis.json'), 'utf8')) as Record<string, unknown>;
    g.extraData = '0x1234';
    await writeFile(join(other, 'genesis.json'), JSON.stringify(g));
    await copyFile(join(src, 'chain.rlp'), join(other, 'chain.rlp'));
    await expect(importChain({ from: other, datadir })).rejects.toBeInstanceOf(ChainMismatchError);
    const r = await runCli(['sync', '--from', other, '--datadir', datadir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^node-cli: datadir .* holds a chain with genesis 0x[0-9a-f]{64}, but .* has genesis 0x[0-9a-f]{64}; use another --datadir\n$/,
    );
  });

  test('a datadir in use by another process is refused at once with one line naming it', async () => {
    const datadir = join(await temp(), 'data');
    await importChain({ from: src, datadir, to: 2n });
    const store = await openChainStore(datadir);
    try {
      const r = await runCli(['sync', '--from', src, '--datadir', datadir], { timeoutMs: 30_000 });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `node-cli: datadir ${datadir} is in use by another process (is a server or another sync running on it?)\n`,
      );
    } finally {
      await store.close();
    }
  });
});

// The crash test runs on the fixture chain's first PREFIX blocks (contract creations, token
// transfers, uncles, logs): each round starts `sync --to PREFIX` with one block per batch and
// kills it at a random moment within a second of its first commit (its first progress line), so
// every kill lands mid-import whatever the machine's load; the last run resumes to PREFIX. Each
// round proves the same thing (a kill between or inside batches, then a resume), so two rounds
// do. The reference is an uninterrupted `sync --to PREFIX` into another datadir, run alongside.
const PREFIX = 200;
const fixtures = chainDir('fixtures');
const f = fixtures === undefined ? describe.skip : describe;
if (fixtures === undefined) console.log('skipped: fixtures/ not generated, no chain for the SIGKILL test');

/** `node-cli sync --to PREFIX --group-blocks 1`, SIGKILLed within a second of its first commit; its exit code (null when killed). */
function syncKilledMidImport(chain: string, datadir: string): Promise<number | null> {
  const args = ['sync', '--from', chain, '--datadir', datadir, '--to', String(PREFIX), '--group-blocks', '1'];
  const child = spawn(process.execPath, [cliBin(), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let timer: NodeJS.Timeout | undefined;
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    if (timer === undefined && chunk.includes('sync:'))
      timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 1_000));
  });
  return new Promise((res) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      res(code);
    }),
  );
}

f('crash safety on the fixture chain', () => {
  test('SIGKILL at random moments, resumed each time, equals an uninterrupted import', async () => {
    const tmp = await tempDir('ingest-crash-');
    try {
      const chain = fixtures as string;
      const datadir = join(tmp.dir, 'data');
      const reference = join(tmp.dir, 'reference');
      const uninterrupted = runCli(['sync', '--from', chain, '--datadir', reference, '--to', String(PREFIX)]);
      let kills = 0;
      for (let round = 0; round < 2; round++) {
        const code = await syncKilledMidImport(chain, datadir);
        if (code === null) kills++;
        else expect(code).toBe(0);
      }
      expect(kills).toBe(2);
      const r = await runCli(['sync', '--from', chain, '--datadir', datadir, '--to', String(PREFIX)]);
      expect(r.code).toBe(0);
      expect((await uninterrupted).code).toBe(0);
      const resumed = await digestDatadir(datadir);
      expect(resumed.entries).toBeGreaterThan(PREFIX);
      expect(resumed).toEqual(await digestDatadir(reference));
    } finally {
      await tmp.cleanup();
    }
  });
});
