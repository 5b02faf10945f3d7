// `npm run bench:traces [-- --blocks 400] [--txs 12] [--holders 300] [--bodies 600] [--duration 6]
//  [--connections 16] [--filter-blocks 100] [--only <mix words>] [--serve-args "<args>"]`: traces, this node beside anvil
// 1.7.1 on the same chain in the same run. The chain is the read bench's (bench/src/read-chain.ts:
// anvil mines ERC-20 transfers and ETH transfers, this node follows it executing every block), the
// runner the varied bench's (bench/src/varied-run.ts): per mix a cold pass (every body once), a
// check of every distinct reply, a warm closed-loop load whose every answer is compared with the
// checked reply. Every reply is checked against the receipts anvil gave while the chain was built
// (independent of both servers' tracers): the top call frame's sender, recipient and gas used, the
// block's transactions in order, trace_filter's and ots_searchTransactionsBefore's transactions
// against the bench's own scan of every receipt. The two servers' replies are compared in the
// parts geth, reth and Erigon agree on. anvil keeps the state of its last --anvil-history blocks:
// traces of older blocks are not sent to it ("unsupported").
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonical, readChainRun } from './src/read-chain.js';
import type { Json, ReadChain, ReadFacts } from './src/read-chain.js';
import { arg } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';
import { Rng } from './src/synth.js';
import { runVaried } from './src/varied-run.js';
import { callMaker, qty } from './src/varied-mix.js';
import type { Call, ChainUnderTest, Mix, Reply, ServerName } from './src/varied-mix.js';

printRunRecord('bench:traces');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');

const bodies = Number(arg('bodies', '600'));
const filterBlocks = Number(arg('filter-blocks', '100'));
const CALL_TRACER = { tracer: 'callTracer' };

const lower = (v: unknown): string => String(v).toLowerCase();

/** What a transaction's top frame must show, from its receipt. */
interface TxFacts {
  hash: string;
  from: string;
  to: string;
  gasUsed: bigint;
  block: number;
  blockHash: string;
  position: number;
}

function txFacts(f: ReadFacts): { txs: TxFacts[]; byBlock: Map<number, TxFacts[]> } {
  const txs: TxFacts[] = [];
  const byBlock = new Map<number, TxFacts[]>();
  for (const [n, rs] of f.blockReceipts) {
    const list = rs.map((r, i) => ({
      hash: lower(r.transactionHash),
      from: lower(r.from),
      to: lower(r.to ?? r.contractAddress),
      gasUsed: BigInt(r.gasUsed as string),
      block: n,
      blockHash: lower(r.blockHash),
      position: i,
    }));
    byBlock.set(n, list);
    txs.push(...list);
  }
  return { txs, byBlock };
}

function fail(server: ServerName, c: Call, what: string): never {
  throw new Error(`${server}: ${c.body.slice(0, 200)}: ${what}`);
}

/** geth's callTracer frame of a transaction against its receipt. */
function checkCallFrame(server: ServerName, c: Call, frame: Json, tx: TxFacts): void {
  if (lower(frame.type) !== 'call') fail(server, c, `frame type ${String(frame.type)}`);
  if (lower(frame.from) !== tx.from || lower(frame.to) !== tx.to)
    fail(server, c, `frame ${String(frame.from)} -> ${String(frame.to)}, the receipt ${tx.from} -> ${tx.to}`);
  // anvil's top frame's gasUsed is the block's cumulative gas (../shared/research/anvil-deviations.md).
  if (server !== 'anvil' && BigInt(frame.gasUsed as string) !== tx.gasUsed)
    fail(server, c, `gasUsed ${String(frame.gasUsed)}, the receipt ${tx.gasUsed}`);
  if (frame.error !== undefined) fail(server, c, `an error in a transaction that succeeded: ${String(frame.error)}`);
}

/** A Parity-style trace list of one transaction against its receipt: the top call first. */
function checkParity(server: ServerName, c: Call, traces: Json[], tx: TxFacts): void {
  const top = traces[0] ?? fail(server, c, 'no trace');
  const action = top.action as Json;
  if (top.type !== 'call' || lower(action.from) !== tx.from || lower(action.to) !== tx.to)
    fail(server, c, `top trace ${JSON.stringify(top).slice(0, 200)}, the receipt ${tx.from} -> ${tx.to}`);
  if ((top.traceAddress as unknown[]).length !== 0 || top.subtraces !== traces.length - 1)
    fail(
      server,
      c,
      `top trace ${JSON.stringify(top.traceAddress)} with ${String(top.subtraces)} subtraces of ${traces.length}`,
    );
  for (const t of traces) {
    if (lower(t.transactionHash) !== tx.hash || t.blockNumber !== tx.block || lower(t.blockHash) !== tx.blockHash)
      fail(server, c, `trace of ${String(t.transactionHash)} in block ${String(t.blockNumber)}`);
    if (t.transactionPosition !== tx.position) fail(server, c, `position ${String(t.transactionPosition)}`);
  }
}

/** What both servers must agree on in a Parity trace (reth's and Erigon's fields). */
const parityPart = (t: Json): unknown => ({
  type: t.type,
  action: t.action,
  result: t.result,
  error: t.error,
  subtraces: t.subtraces,
  traceAddress: t.traceAddress,
  transactionHash: lower(t.transactionHash),
});

function traceMixes(f: ReadFacts, rng: Rng) {
  const { txs, byBlock } = txFacts(f);
  const call = callMaker();
  const facts = new Map<string, (server: ServerName, r: unknown, c: Call) => void>();
  const expecting = (c: Call, check: (server: ServerName, r: unknown, c: Call) => void): Call => {
    facts.set(c.body, check);
    return c;
  };
  // From block 3 on: block 1 deploys the token (a creation), block 2 funds the senders.
  const transfers = txs.filter((t) => t.block >= 3);
  const tx = (): TxFacts => transfers[rng.int(transfers.length)] as TxFacts;
  const block = (): number => 3 + rng.int(f.head - 2);
  const oldBlocks = (n: number): boolean => n <= f.head - f.anvilHistory;
  const callTx = (): Call => {
    const t = tx();
    const c = call('trace', 'debug_traceTransaction', [t.hash, CALL_TRACER]);
    return expecting(c, (s, r) => checkCallFrame(s, c, r as Json, t));
  };
  const parityTx = (): Call => {
    const t = tx();
    const c = call('trace', 'trace_transaction', [t.hash]);
    return expecting(c, (s, r) => checkParity(s, c, r as Json[], t));
  };
  const callBlock = (): Call => {
    const n = block();
    const list = byBlock.get(n) ?? [];
    const c = call('trace', 'debug_traceBlockByNumber', [qty(n), CALL_TRACER]);
    return expecting(c, (s, r) => {
      const items = r as Json[];
      if (items.length !== list.length) fail(s, c, `${items.length} traces for ${list.length} transactions`);
      items.forEach((item, i) => {
        const t = list[i] as TxFacts;
        if (item.txHash !== undefined && lower(item.txHash) !== t.hash)
          fail(s, c, `trace ${i} of ${String(item.txHash)}`);
        checkCallFrame(s, c, item.result as Json, t);
      });
    });
  };
  const parityBlock = (): Call => {
    const n = block();
    const list = byBlock.get(n) ?? [];
    const c = call('trace', 'trace_block', [qty(n)]);
    return expecting(c, (s, r) => {
      const traces = (r as Json[]).filter((t) => t.type !== 'reward');
      for (const t of list)
        checkParity(
          s,
          c,
          traces.filter((x) => lower(x.transactionHash) === t.hash),
          t,
        );
      if (new Set(traces.map((x) => lower(x.transactionHash))).size !== list.length)
        fail(s, c, `traces of ${traces.length} for ${list.length} transactions`);
    });
  };
  // The ETH transfers each holder received, in chain order (token transfers do not call a holder).
  const received = new Map<string, TxFacts[]>();
  for (const t of txs) {
    const list = received.get(t.to);
    if (list === undefined) received.set(t.to, [t]);
    else list.push(t);
  }
  const holder = (): string => f.holders[rng.int(f.holders.length)] as string;
  // A window of --filter-blocks blocks: the node reads the range's frame blooms, then the recorded
  // frames of the blocks that may match (a datadir without recorded frames re-executes them all).
  const filter = (): Call => {
    const h = holder();
    const from = 3 + rng.int(Math.max(1, f.head - filterBlocks - 1));
    const to = Math.min(f.head, from + filterBlocks - 1);
    const want = (received.get(h) ?? []).filter((t) => t.block >= from && t.block <= to).map((t) => t.hash);
    const c = call('trace', 'trace_filter', [{ fromBlock: qty(from), toBlock: qty(to), toAddress: [h] }]);
    return expecting(c, (s, r) => {
      const got = (r as Json[]).map((t) => lower(t.transactionHash));
      if (got.join() !== want.join()) fail(s, c, `${got.length} traces, the receipts ${want.length} transfers`);
    });
  };
  const search = (): Call => {
    const h = holder();
    const want = (received.get(h) ?? [])
      .map((t) => t.hash)
      .reverse()
      .slice(0, 25);
    const c = call('trace', 'ots_searchTransactionsBefore', [h, 0, 25]);
    return expecting(c, (s, r) => {
      const got = ((r as Json).txs as Json[]).map((t) => lower(t.hash));
      if (got.join() !== want.join()) fail(s, c, `${got.length} transactions, the receipts ${want.length}`);
    });
  };
  const make = (n: number, f: () => Call): Call[] => Array.from({ length: n }, f);
  const mixes: Mix[] = [
    { label: 'debug_traceTransaction callTracer, random tx', calls: make(bodies, callTx) },
    { label: 'trace_transaction, random tx', calls: make(bodies, parityTx) },
    { label: 'debug_traceBlockByNumber callTracer, random block', calls: make(Math.min(bodies, 300), callBlock) },
    { label: 'trace_block, random block', calls: make(Math.min(bodies, 300), parityBlock) },
    { label: `trace_filter toAddress one holder, ${filterBlocks} blocks`, calls: make(60, filter) },
    { label: 'ots_searchTransactionsBefore, one holder, page of 25', calls: make(300, search) },
  ];
  const blockOf = (c: Call): number | undefined => {
    const p = c.params[0];
    if (c.method === 'debug_traceBlockByNumber' || c.method === 'trace_block') return Number(p);
    if (c.method === 'debug_traceTransaction' || c.method === 'trace_transaction')
      return txs.find((t) => t.hash === p)?.block;
    if (c.method === 'trace_filter') return Number((c.params[0] as Json).fromBlock);
    return f.head; // a search reads blocks and receipts, which anvil keeps for every block
  };
  const old = new Set(
    mixes
      .flatMap((m) => m.calls)
      .filter((c) => oldBlocks(blockOf(c) ?? 0))
      .map((c) => c.body),
  );
  return { mixes, facts, old };
}

function traceChain(base: ReadChain): ChainUnderTest {
  const { mixes, facts, old } = traceMixes(base.facts, new Rng(48));
  return {
    ...base,
    mixes,
    check: async (c: Call, r: Reply, server: ServerName) => {
      if (r.error !== undefined) {
        if (server === 'anvil') return 'unsupported';
        throw new Error(`${server}: ${c.body.slice(0, 200)} -> error ${JSON.stringify(r.error)}`);
      }
      const check = facts.get(c.body);
      if (check === undefined) throw new Error(`no facts for ${c.body}`);
      check(server, r.result, c);
      return 'ok';
    },
    normalise: (c: Call, r: Reply) => {
      if (r.result === undefined) return undefined;
      if (c.method === 'trace_transaction') return canonical((r.result as Json[]).map(parityPart));
      if (c.method === 'trace_block')
        return canonical((r.result as Json[]).filter((t) => t.type !== 'reward').map(parityPart));
      if (c.method === 'debug_traceTransaction') {
        // anvil's top gas and gasUsed deviate from geth's (anvil-deviations.md): the rest is compared.
        const { gas: _gas, gasUsed: _gasUsed, ...rest } = r.result as Json;
        return canonical(rest);
      }
      return undefined;
    },
    anvilSkips: (calls) => new Set(calls.filter((c) => old.has(c.body)).map((c) => c.body)),
  };
}

await runVaried(readChainRun('bench:traces', root, cli, { connections: 16, bodies }, traceChain));
