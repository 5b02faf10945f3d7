// `npm run bench:http -- --varied`: real-traffic shaped load. For each request mix, thousands of
// distinct request bodies drawn across the WHOLE fixture chain (random blocks, every
// transaction, contract slots at random historical blocks, small getLogs ranges), sent by the
// raw closed-loop client (bench/src/load.ts, one body after the other over 64 keep-alive
// sockets) to this node (`node-cli serve` on the imported fixture chain) and to anvil 1.7.1
// (node_modules/.bin/anvil) on the same transactions replayed block by block
// (bench/src/fixture-chain.ts), in the same run.
//
// Every reply is checked. Before the load, each body is sent once to each server and its reply
// verified against answers computed here, independently of the code under test: block and
// transaction hashes recomputed from chain.rlp (keccak of the header / transaction bytes), tx
// locations from the export's order, the account proof's root node hashing to the export's
// state root, and values that two independent EVMs (this node's ethereumjs-executed import and
// anvil's revm) must agree on: storage words, proof values, logs. During the load each reply
// must equal its body's verified reply byte for byte; anything else is counted (wrong replies,
// -32005 sheds among them, non-200s, socket errors).
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { batchClient, readChain, replayIntoAnvil } from './fixture-chain.js';
import type { FixtureBlock } from './fixture-chain.js';
import { rawLoadVaried } from './load.js';
import type { VariedResult } from './load.js';
import { Rng, keccak256 } from './synth.js';

export interface VariedOptions {
  root: string;
  cli: string;
  datadir?: string;
  seconds: number;
  connections: number;
  bodies: number;
  /** Only these mixes (labels' first word), or all. */
  only?: string[];
  /** Skip anvil (quick iterations on this node only). */
  noAnvil?: boolean;
  /** Extra args for `serve`. */
  serveArgs?: string[];
}

const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const EMITTER = '0xac71dc6244075b8763fac5367375306e747c761a';
const REGISTRY = '0xc3e03991e5e0bd4a705887a58bb2d3fa2538c0c7';

const qty = (n: number | bigint): string => `0x${n.toString(16)}`;
const word = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;

type Kind = 'blockHashes' | 'blockFull' | 'tx' | 'storage' | 'proof' | 'logs';

interface Call {
  kind: Kind;
  method: string;
  params: unknown[];
  /** The body, with its own id. */
  body: string;
  /** For storage/proof: the tuple index shared by the two mixes. */
  tuple?: number;
}

interface Mix {
  label: string;
  calls: Call[];
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
    s.on('error', rej);
  });
}

function buildMixes(chain: FixtureBlock[], beacons: string[], n: number): Mix[] {
  const rng = new Rng(15);
  const head = chain.length;
  const allTxs = chain.flatMap((b) => b.txs);
  let id = 1;
  const call = (kind: Kind, method: string, params: unknown[], tuple?: number): Call => {
    const c: Call = { kind, method, params, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) };
    if (tuple !== undefined) c.tuple = tuple;
    return c;
  };
  const blockNo = (): number => 1 + rng.int(head);
  // Storage tuples (contract, slot, block), shared by the storage and proof mixes.
  const contracts = [TOKEN, EMITTER, REGISTRY];
  const tuples = Array.from({ length: n }, () => ({ address: contracts[rng.int(3)] as string, slot: rng.int(8), block: blockNo() }));
  const hashes: Call[] = Array.from({ length: n }, () => call('blockHashes', 'eth_getBlockByNumber', [qty(blockNo()), false]));
  const full: Call[] = Array.from({ length: n }, () => call('blockFull', 'eth_getBlockByNumber', [qty(blockNo()), true]));
  const txs: Call[] = Array.from({ length: n }, (_, i) => call('tx', 'eth_getTransactionByHash', [(allTxs[i < allTxs.length ? i : rng.int(allTxs.length)] as { hash: string }).hash]));
  // Every transaction once, in random order.
  for (let i = txs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [txs[i], txs[j]] = [txs[j] as Call, txs[i] as Call];
  }
  const storage = tuples.map((t, i) => call('storage', 'eth_getStorageAt', [t.address, word(t.slot), qty(t.block)], i));
  const proofs = tuples.map((t, i) => call('proof', 'eth_getProof', [t.address, [word(t.slot)], qty(t.block)], i));
  const addresses = [TOKEN, EMITTER, ...beacons];
  const logs: Call[] = Array.from({ length: n }, () => {
    const width = 1 + rng.int(100);
    const from = 1 + rng.int(head - width + 1);
    // Mostly the two busy contracts (real traffic), a quarter rare emitters.
    const address = rng.next() < 0.75 ? (addresses[rng.int(2)] as string) : (addresses[2 + rng.int(addresses.length - 2)] as string);
    return call('logs', 'eth_getLogs', [{ address, fromBlock: qty(from), toBlock: qty(from + width - 1) }]);
  });
  // The mixed workload: a fifth each of blocks (half full), txs, storage, proofs, small getLogs.
  const mixed: Call[] = [];
  const pools = [hashes, full, txs, storage, proofs, logs];
  const weights = [0.1, 0.1, 0.2, 0.2, 0.2, 0.2];
  for (let i = 0; i < n; i++) {
    let r = rng.next();
    let k = 0;
    while (k < weights.length - 1 && r >= (weights[k] as number)) r -= weights[k++] as number;
    const pool = pools[k] as Call[];
    mixed.push(pool[rng.int(pool.length)] as Call);
  }
  return [
    { label: 'eth_getBlockByNumber, random block, hashes', calls: hashes },
    { label: 'eth_getBlockByNumber, random block, full txs', calls: full },
    { label: 'eth_getTransactionByHash, every tx', calls: txs },
    { label: 'eth_getStorageAt, contract slots at random blocks', calls: storage },
    { label: 'eth_getProof, same tuples, one slot', calls: proofs },
    { label: 'eth_getLogs, one address, 1-100 blocks', calls: logs },
    { label: 'mixed (blocks 20%, txs, storage, proofs, small getLogs 20% each)', calls: mixed },
  ];
}

/** Sends every body once (16 at a time), returning the reply texts. */
async function prefetch(url: string, bodies: string[]): Promise<string[]> {
  const out: string[] = new Array(bodies.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < bodies.length) {
      const i = next++;
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[i] });
      out[i] = await r.text();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return out;
}

interface Reply {
  result?: unknown;
  error?: { code: number; message: string };
}

class Checker {
  readonly byNumber = new Map<number, FixtureBlock>();
  readonly txLoc = new Map<string, { block: FixtureBlock; index: number }>();
  constructor(chain: FixtureBlock[]) {
    for (const b of chain) {
      this.byNumber.set(b.number, b);
      b.txs.forEach((t, i) => this.txLoc.set(t.hash, { block: b, index: i }));
    }
  }

  /** Throws unless `r` is the right answer to `c` (`ours`: this node, whose block hashes are the export's). */
  check(c: Call, r: Reply, ours: boolean, peer?: Reply): void {
    const fail = (why: string): never => {
      throw new Error(`${ours ? 'chainnode' : 'anvil'}: ${c.body} -> ${why}: ${JSON.stringify(r).slice(0, 300)}`);
    };
    if (r.error !== undefined || r.result === undefined || r.result === null) fail('no result');
    const res = r.result as Record<string, unknown>;
    switch (c.kind) {
      case 'blockHashes':
      case 'blockFull': {
        const b = this.byNumber.get(Number(c.params[0])) as FixtureBlock;
        if (Number(res['number']) !== b.number) fail('wrong number');
        if (ours && res['hash'] !== b.hash) fail('block hash is not keccak(header)');
        const txs = res['transactions'] as (string | Record<string, unknown>)[];
        const got = txs.map((t) => (typeof t === 'string' ? t : (t['hash'] as string)));
        if (got.join() !== b.txs.map((t) => t.hash).join()) fail('transaction hashes differ from the export');
        if (c.kind === 'blockFull') {
          txs.forEach((t, i) => {
            const o = t as Record<string, unknown>;
            if (Number(o['blockNumber']) !== b.number || Number(o['transactionIndex']) !== i) fail('tx location');
            if (ours && o['blockHash'] !== b.hash) fail('tx blockHash');
          });
        }
        break;
      }
      case 'tx': {
        const loc = this.txLoc.get(c.params[0] as string);
        if (loc === undefined) return fail('unknown tx');
        if (res['hash'] !== c.params[0]) fail('hash');
        if (Number(res['blockNumber']) !== loc.block.number || Number(res['transactionIndex']) !== loc.index) fail('location');
        if (ours && res['blockHash'] !== loc.block.hash) fail('blockHash');
        break;
      }
      case 'storage': {
        if (typeof r.result !== 'string' || !/^0x[0-9a-f]{64}$/.test(r.result)) fail('not a word');
        if (peer !== undefined && peer.result !== r.result) fail(`the other EVM says ${JSON.stringify(peer.result)}`);
        break;
      }
      case 'proof': {
        const b = this.byNumber.get(Number(c.params[2])) as FixtureBlock;
        const ap = res['accountProof'] as string[];
        const root = `0x${Buffer.from(keccak256(Buffer.from((ap[0] as string).slice(2), 'hex'))).toString('hex')}`;
        if (ours && root !== b.stateRoot) fail("account proof root is not the export's state root");
        const sp = (res['storageProof'] as { value: string }[])[0] as { value: string };
        // peer: the other server's eth_getStorageAt of the same tuple.
        if (peer !== undefined && BigInt(sp.value) !== BigInt(peer.result as string)) fail(`proof value differs from the other EVM's storage word ${JSON.stringify(peer.result)}`);
        break;
      }
      case 'logs': {
        const logs = r.result as Record<string, unknown>[];
        if (!Array.isArray(logs)) return fail('not an array');
        const [from, to] = [Number((c.params[0] as { fromBlock: string }).fromBlock), Number((c.params[0] as { toBlock: string }).toBlock)];
        for (const l of logs) {
          const n = Number(l['blockNumber']);
          if (n < from || n > to || l['address'] !== (c.params[0] as { address: string }).address) fail('log outside the filter');
          const loc = this.txLoc.get(l['transactionHash'] as string);
          if (loc === undefined || loc.block.number !== n || Number(l['transactionIndex']) !== loc.index) fail('log tx location');
          if (ours && l['blockHash'] !== (loc as { block: FixtureBlock }).block.hash) fail('log blockHash');
        }
        if (peer !== undefined) {
          const key = (x: Record<string, unknown>): string => [x['blockNumber'], x['transactionHash'], x['logIndex'], x['address'], (x['topics'] as string[]).join(), x['data']].join('|');
          const a = logs.map(key).join('\n');
          const p = (peer.result as Record<string, unknown>[]).map(key).join('\n');
          if (a !== p) fail(`logs differ from the other EVM's (${logs.length} vs ${(peer.result as unknown[]).length})`);
        }
        break;
      }
    }
  }
}

interface Target {
  name: 'chainnode' | 'anvil';
  port: number;
  path: string;
  replies: Map<string, string>; // body -> verified reply
  unsupported: Set<Kind>;
}

async function waitFor(url: string, proc: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`${url}: process exited`);
    try {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' });
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url}: did not start`);
}

export async function runVaried(o: VariedOptions): Promise<void> {
  const fixtures = join(o.root, 'fixtures');
  const chain = readChain(join(fixtures, 'chain.rlp'));
  const beacons = [...readFileSync(join(fixtures, 'README.md'), 'utf8').matchAll(/^\| \d+ \| `(0x[0-9a-f]{40})` \| \d+ \|$/gm)].map((m) => m[1] as string);
  const mixes = buildMixes(chain, beacons, o.bodies).filter((m) => o.only === undefined || o.only.some((w) => m.label.startsWith(w) || m.label.includes(w)));
  const node = (args: string[]): string => execFileSync(process.execPath, [o.cli, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const procs: ChildProcess[] = [];
  let tmp: string | undefined;
  try {
    let datadir = o.datadir;
    if (datadir === undefined) {
      tmp = mkdtempSync(join(tmpdir(), 'bench-varied-'));
      datadir = join(tmp, 'data');
      console.error(`varied: importing ${fixtures} into ${datadir}`);
      node(['sync', '--from', fixtures, '--datadir', datadir]);
    }
    const key = (JSON.parse(node(['keys', 'create', '--plan', 'custom', '--daily-credits', '900000000000000', '--label', 'bench', '--json', '--datadir', datadir])) as { key: string }).key;
    const ourPort = await freePort();
    const srv = spawn(process.execPath, [o.cli, 'serve', '--datadir', datadir, '--port', String(ourPort), ...(o.serveArgs ?? [])], { stdio: ['ignore', 'ignore', 'inherit'] });
    procs.push(srv);
    const targets: Target[] = [{ name: 'chainnode', port: ourPort, path: `/v3/${key}`, replies: new Map(), unsupported: new Set() }];
    await waitFor(`http://127.0.0.1:${ourPort}/v3/${key}`, srv);
    if (o.noAnvil !== true) {
      const anvilPort = await freePort();
      const anvil = spawn(join(o.root, 'node_modules', '.bin', 'anvil'), ['--port', String(anvilPort), '--init', join(fixtures, 'genesis.json'), '--no-mining', '--order', 'fifo', '--hardfork', 'london', '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
      procs.push(anvil);
      await waitFor(`http://127.0.0.1:${anvilPort}/`, anvil);
      const t0 = Date.now();
      await replayIntoAnvil(batchClient(`http://127.0.0.1:${anvilPort}/`), chain);
      console.error(`varied: anvil replayed ${chain.length} blocks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      targets.push({ name: 'anvil', port: anvilPort, path: '/', replies: new Map(), unsupported: new Set() });
    }
    // Fetch and verify every distinct body's reply on every server.
    const checker = new Checker(chain);
    const calls = [...new Map(mixes.flatMap((m) => m.calls).map((c) => [c.body, c])).values()];
    const fetched = new Map<Target, Reply[]>();
    for (const t of targets) {
      const t0 = Date.now();
      const texts = await prefetch(`http://127.0.0.1:${t.port}${t.path}`, calls.map((c) => c.body));
      texts.forEach((x, i) => t.replies.set((calls[i] as Call).body, x));
      fetched.set(t, texts.map((x) => JSON.parse(x) as Reply));
      console.error(`varied: ${t.name}: ${calls.length} distinct bodies fetched in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    // The storage word of each tuple per server, for the cross checks.
    const storageOf = new Map<Target, Map<number, Reply>>();
    for (const t of targets) {
      const m = new Map<number, Reply>();
      (fetched.get(t) as Reply[]).forEach((r, i) => {
        const c = calls[i] as Call;
        if (c.kind === 'storage' && c.tuple !== undefined) m.set(c.tuple, r);
      });
      storageOf.set(t, m);
    }
    for (const t of targets) {
      const peer = targets.find((x) => x !== t);
      const replies = fetched.get(t) as Reply[];
      replies.forEach((r, i) => {
        const c = calls[i] as Call;
        if (t.name === 'anvil' && r.error !== undefined && c.kind === 'proof') {
          t.unsupported.add('proof');
          return;
        }
        let p: Reply | undefined;
        if (peer !== undefined && (c.kind === 'storage' || c.kind === 'proof') && c.tuple !== undefined) p = storageOf.get(peer)?.get(c.tuple);
        else if (peer !== undefined && c.kind === 'logs') p = (fetched.get(peer) as Reply[])[i];
        checker.check(c, r, t.name === 'chainnode', p);
      });
      console.error(`varied: ${t.name}: every reply verified${t.unsupported.size > 0 ? ` (unsupported: ${[...t.unsupported].join(', ')})` : ''}`);
    }
    const rows: string[] = [];
    const loads: number[] = [];
    const fmt = (r: VariedResult | undefined): string =>
      r === undefined ? 'unsupported | | | ' : `${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.bad + r.mismatched + r.errors}${r.shed > 0 ? ` (${r.shed} shed)` : ''}`;
    for (const m of mixes) {
      const res: (VariedResult | undefined)[] = [];
      for (const t of targets) {
        const usable = m.calls.filter((c) => !t.unsupported.has(c.kind));
        if (usable.length < m.calls.length / 2) {
          res.push(undefined);
          continue;
        }
        loads.push(loadavg()[0] as number);
        const r = await rawLoadVaried({
          host: '127.0.0.1',
          port: t.port,
          path: t.path,
          bodies: usable.map((c) => c.body),
          expected: usable.map((c) => t.replies.get(c.body) as string),
          connections: o.connections,
          seconds: o.seconds,
        });
        res.push(r);
        console.error(`varied: ${m.label}: ${t.name} ${Math.round(r.rps)} req/s p50 ${r.p50} p99 ${r.p99} wrong ${r.mismatched} (shed ${r.shed}) non-200 ${r.bad} errors ${r.errors}, ${r.distinct} distinct bodies answered`);
      }
      const distinct = new Set(m.calls.map((c) => JSON.stringify([c.method, c.params]))).size;
      rows.push(`| ${m.label} | ${distinct} | ${fmt(res[0])} | ${fmt(res[1])} |`);
    }
    const la = loads.length === 0 ? 'n/a' : `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`;
    const txCount = chain.reduce((s, b) => s + b.txs.length, 0);
    console.log(`\nMachine: ${cpus().length} cores, ${cpus()[0]?.model ?? 'cpu'}; Node ${process.version}; ${new Date().toISOString().slice(0, 16)} UTC; load average ${la} (1-min, at the start of each case)`);
    console.log(`Command: node bench/dist/http.js ${process.argv.slice(2).join(' ')} (raw-http client, ${o.connections} connections, closed loop, ${o.seconds} s after a 2 s warm-up per case; chain: fixtures, ${chain.length} blocks, ${txCount} txs; anvil 1.7.1 on the same transactions replayed)\n`);
    console.log('| request mix | distinct params | chainnode req/s | p50 ms | p99 ms | errors | anvil req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.exitCode !== null ? undefined : new Promise((r) => p.on('exit', r)))));
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
