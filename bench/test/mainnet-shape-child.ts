// The CPU-heavy steps of mainnet-shape.test.ts, run as child node processes: jest's module
// sandbox makes the generator's and the import's execution about 1.7 times slower. Each prints
// one JSON line on stdout:
//   node mainnet-shape-child.js generate <params json> <dir> [<datadir>]
//     writes <dir>/chain.rlp, genesis.json and manifest.json (and the datadir, if given);
//     prints { manifest, growth }
//   node mainnet-shape-child.js import <from dir> <datadir>
//     runs importChain (what `node-cli sync --from` runs); prints { blocks, txs, logs, headHash },
//     or { refused } with the error's name and message when it throws a BlockVerificationError
//   node mainnet-shape-child.js traces <datadir>
//     each block's traces three ways: its transactions one at a time (each read from the rows
//     holding it), the whole block (its rows joined), and the whole block re-executed (a store
//     without the rows); prints { blocks, txs, rows: [per block, the three callTracer and
//     prestateTracer diffMode answers' digests and the rows read], filter: [a sender's
//     trace_filter, re-derived] }
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { BlockVerificationError, importChain } from '@chainnode/ingest';
import { createRpcService } from '@chainnode/rpc';
import { openChainStore } from '@chainnode/store';
import { withoutRecordedRows } from '@chainnode/testkit';
import { generateMainnetShape, type ShapeParams } from '../src/mainnet-shape/generator.js';

async function generate(params: ShapeParams, dir: string, datadir?: string) {
  const r = await generateMainnetShape({
    ...params,
    chainRlpPath: join(dir, 'chain.rlp'),
    ...(datadir !== undefined ? { datadir } : {}),
  });
  writeFileSync(join(dir, 'genesis.json'), r.genesisJson);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(r.manifest));
  return { manifest: r.manifest, growth: r.growth };
}

async function runImport(from: string, datadir: string) {
  try {
    const s = await importChain({ from, datadir });
    return { blocks: s.blocks, txs: s.txs, logs: s.logs, headHash: `0x${Buffer.from(s.head.hash).toString('hex')}` };
  } catch (err) {
    if (err instanceof BlockVerificationError) return { refused: `${err.name}: ${err.message}` };
    throw err;
  }
}

/** The traces of every block of `datadir`, read three ways (see the header); digests to compare. */
async function traces(datadir: string) {
  const store = await openChainStore(datadir);
  // The recorded rows' reads: a transaction's alone must read its rows only, never the block's
  // (what a trace falls back to when a row does not hold the transaction) nor the raw block (what
  // re-executing it reads).
  const reads = { part: 0, partBytes: 0, whole: 0, wholeBytes: 0, raw: 0 };
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop === 'rawBlock') reads.raw++;
      if (prop !== 'txFrames' && prop !== 'txStateDiffs') return typeof v === 'function' ? v.bind(target) : v;
      return async (hash: Uint8Array, index?: number) => {
        const read = v as (hash: Uint8Array, index?: number) => Promise<Uint8Array | undefined>;
        const row = await read.call(target, hash, index);
        if (index === undefined) {
          reads.whole++;
          reads.wholeBytes += row?.length ?? 0;
        } else {
          reads.part++;
          reads.partBytes += row?.length ?? 0;
        }
        return row;
      };
    },
  });
  try {
    const recorded = createRpcService(counted, { callTimeoutMs: 600_000 });
    const reexecuted = createRpcService(withoutRecordedRows(store, 'missing'), { callTimeoutMs: 600_000 });
    type Svc = typeof recorded;
    const call = async (svc: Svc, method: string, params: unknown[]): Promise<unknown> => {
      const r = JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');
      if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
      return r.result;
    };
    const digest = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex');
    const head = Number(await call(recorded, 'eth_blockNumber', []));
    const rows: { txs: number; callTracer: string[]; diffMode: string[]; reads: (typeof reads)[] }[] = [];
    const senders = new Map<string, number>();
    for (let n = 1; n <= head; n++) {
      const number = `0x${n.toString(16)}`;
      const block = (await call(recorded, 'eth_getBlockByNumber', [number, true])) as {
        transactions: { hash: string; from: string }[];
      };
      for (const t of block.transactions) senders.set(t.from, (senders.get(t.from) ?? 0) + 1);
      const row = {
        txs: block.transactions.length,
        callTracer: [] as string[],
        diffMode: [] as string[],
        reads: [] as (typeof reads)[],
      };
      for (const tracer of [{ tracer: 'callTracer' }, { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]) {
        const alone: unknown[] = [];
        Object.assign(reads, { part: 0, partBytes: 0, whole: 0, wholeBytes: 0, raw: 0 });
        for (const t of block.transactions)
          alone.push({ txHash: t.hash, result: await call(recorded, 'debug_traceTransaction', [t.hash, tracer]) });
        const aloneReads = { ...reads };
        Object.assign(reads, { part: 0, partBytes: 0, whole: 0, wholeBytes: 0, raw: 0 });
        const whole = await call(recorded, 'debug_traceBlockByNumber', [number, tracer]);
        const again = await call(reexecuted, 'debug_traceBlockByNumber', [number, tracer]);
        (tracer.tracer === 'callTracer' ? row.callTracer : row.diffMode).push(
          digest(alone),
          digest(whole),
          digest(again),
        );
        row.reads.push(aloneReads, { ...reads });
      }
      rows.push(row);
    }
    // trace_filter by a sender of several transactions (the address-appearance index names them; each is
    // read alone), against the re-executed blocks' trace_block entries filtered here.
    const [sender] = [...senders].sort((a, b) => b[1] - a[1])[0] ?? [''];
    const filter = { fromBlock: '0x1', toBlock: `0x${head.toString(16)}`, fromAddress: [sender] };
    const found = (await call(recorded, 'trace_filter', [filter])) as unknown[];
    const expected: unknown[] = [];
    for (let n = 1; n <= head; n++)
      for (const e of (await call(reexecuted, 'trace_block', [`0x${n.toString(16)}`])) as {
        action: { from?: string };
      }[])
        if (e.action.from === sender) expected.push(e);
    return { blocks: head, rows, filter: [found.length, digest(found), expected.length, digest(expected)] };
  } finally {
    await store.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [op, a, b, c] = process.argv.slice(2) as [string, string, string, string | undefined];
  const run =
    op === 'generate'
      ? generate(JSON.parse(a) as ShapeParams, b, c)
      : op === 'import'
        ? runImport(a, b)
        : op === 'traces'
          ? traces(a)
          : undefined;
  if (run === undefined) throw new Error(`unknown step ${op}`);
  run
    .then((out) => process.stdout.write(`${JSON.stringify(out)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    });
}
