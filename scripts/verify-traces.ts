// `npm run verify:traces [-- --chain fixtures|execution-apis] [--from N] [--to N]`: every
// transaction of a bundled chain traced from the rows its executing import recorded (call frames
// and state diffs) and by re-execution through the struct logger's `step` events (a muxTracer
// with prestateTracer wants every opcode), the two answers compared as JSON text: geth's callTracer
// (withLog) and prestateTracer diffMode, and Parity's trace_replayBlockTransactions (trace and
// stateDiff). The suite compares a sample of blocks (its time is a budget); this checks them all.
// Prints each block whose answers differ, and exits 1 when one does.
import { loadavg } from 'node:os';
import { createRpcService } from '@chainnode/rpc';
import type { RpcServiceApi } from '@chainnode/rpc';
import { openChainStore } from '@chainnode/store';
import { datadirCopy, withoutRecordedRows } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? undefined : args[i + 1];
};
const chain = (opt('chain') ?? 'fixtures') as ChainName;
if (chain !== 'fixtures' && chain !== 'execution-apis') throw new Error('--chain: fixtures or execution-apis');

async function rpc(svc: RpcServiceApi, method: string, params: unknown[]): Promise<string> {
  const r = JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return JSON.stringify(r.result);
}

const STEPPED = {
  tracer: 'muxTracer',
  tracerConfig: { callTracer: { withLog: true }, prestateTracer: { diffMode: true } },
};

const copy = await datadirCopy(chain);
const store = await openChainStore(copy.dir);
let failed = 0;
try {
  const recorded = createRpcService(store, { callTimeoutMs: 600_000 });
  const replayed = createRpcService(withoutRecordedRows(store), { callTimeoutMs: 600_000 });
  const head = Number(JSON.parse(await rpc(recorded, 'eth_blockNumber', [])));
  const from = Number(opt('from') ?? '1');
  const to = Math.min(head, Number(opt('to') ?? String(head)));
  const started = Date.now();
  let txs = 0;
  let blocks = 0;
  for (let n = from; n <= to; n++) {
    const block = JSON.parse(await rpc(recorded, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]));
    const count = (block.transactions as string[]).length;
    if (count === 0) continue;
    const hash = Buffer.from((block.hash as string).slice(2), 'hex');
    if ((await store.txFrames?.(hash)) === undefined || (await store.txStateDiffs?.(hash)) === undefined)
      throw new Error(`block ${n}: no recorded rows (was the chain imported with recording on?)`);
    const q: [string, unknown[]][] = [
      ['debug_traceBlockByNumber', [`0x${n.toString(16)}`, STEPPED]],
      ['trace_replayBlockTransactions', [`0x${n.toString(16)}`, ['trace', 'stateDiff']]],
    ];
    for (const [method, params] of q) {
      const [a, b] = [await rpc(recorded, method, params), await rpc(replayed, method, params)];
      if (a !== b) {
        failed++;
        console.log(
          `block ${n} ${method}: recorded and re-executed differ\n  recorded:    ${a.slice(0, 400)}\n  re-executed: ${b.slice(0, 400)}`,
        );
      }
    }
    blocks++;
    txs += count;
    if (blocks % 100 === 0) console.log(`block ${n}: ${blocks} blocks, ${txs} transactions compared`);
  }
  console.log(
    `${chain}: blocks ${from}..${to}, ${blocks} blocks with ${txs} transactions, ${failed} differing answers; ${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0]?.toFixed(1)}`,
  );
} finally {
  await store.close();
  await copy.cleanup();
}
process.exit(failed > 0 ? 1 : 0);
