// `--trace-frames off|on` (PipelineOptions.traceFrames): the executing import records no call
// frames nor state changes while the datadir's setting is off, keeps the setting until it is given again, and
// records the same rows as ever once it is on again. Simulated on a copy of the execution-apis
// chain's prepared store (recorded at import): cut back, then re-imported under each setting.
import { StoreWriter, openChainStore } from '@chainnode/store';
import { availableChains, chainDir, datadirCopy, preparedDatadir } from '@chainnode/testkit';
import { importChain } from '../src/index.js';

const d = availableChains().includes('execution-apis') ? test : test.skip;

async function rewind(dir: string, to: bigint): Promise<void> {
  const w = await StoreWriter.open(dir);
  try {
    await w.rewind(to);
    await w.flush();
  } finally {
    await w.close();
  }
}

/** The TxFrames and TxStateDiffs rows of each block of `from..to` (undefined: neither), by number. */
async function rows(dir: string, from: number, to: number): Promise<(string | undefined)[]> {
  const store = await openChainStore(dir);
  try {
    const out: (string | undefined)[] = [];
    for (let n = from; n <= to; n++) {
      const hash = (await store.canonicalHash(BigInt(n))) as Uint8Array;
      const row = await store.txFrames?.(hash);
      const diffs = await store.txStateDiffs?.(hash);
      const hex = (r: Uint8Array | undefined) => (r === undefined ? '-' : Buffer.from(r).toString('hex'));
      out.push(row === undefined && diffs === undefined ? undefined : `${hex(row)}/${hex(diffs)}`);
    }
    return out;
  } finally {
    await store.close();
  }
}

d('recording off is kept until turned on; on again, the rows are the ones recorded from the start', async () => {
  const copy = await datadirCopy('execution-apis');
  const src = chainDir('execution-apis') as string;
  try {
    const recorded = await rows(await preparedDatadir('execution-apis'), 1, 54);
    const withTxs = recorded.filter((r) => r !== undefined).length;
    expect(withTxs).toBeGreaterThan(10);

    await rewind(copy.dir, 20n);
    await importChain({ from: src, datadir: copy.dir, traceFrames: false });
    let now = await rows(copy.dir, 1, 54);
    expect(now.slice(0, 20)).toEqual(recorded.slice(0, 20));
    expect(now.slice(20).every((r) => r === undefined)).toBe(true);

    // Not given: the datadir's setting (off) holds.
    await rewind(copy.dir, 40n);
    await importChain({ from: src, datadir: copy.dir });
    now = await rows(copy.dir, 1, 54);
    expect(now.slice(20).every((r) => r === undefined)).toBe(true);

    // On again: the blocks imported from now on are recorded, byte for byte as at the start.
    await rewind(copy.dir, 30n);
    await importChain({ from: src, datadir: copy.dir, traceFrames: true });
    now = await rows(copy.dir, 1, 54);
    expect(now.slice(30)).toEqual(recorded.slice(30));
    expect(now.slice(20, 30).every((r) => r === undefined)).toBe(true);
  } finally {
    await copy.cleanup();
  }
});
