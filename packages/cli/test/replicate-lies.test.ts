// `serve --follow <URL> --ingest replicate` behind a lying upstream: a proxy in front of anvil
// that changes one storage value, one log, one receipt status or one balance of one block. Each
// lie must be caught at that block with the field named in /health, nothing of the block may be
// written (its number answers null, the head stays below it), and once the proxy stops lying the
// node follows on to anvil's head with every block, transaction, log, slot and proof equal to
// anvil's. Then SIGKILL during replication: `sync --ingest replicate` killed at random moments and
// resumed ends digest-equal to an uninterrupted replication, to an executing sync and to a
// replication through geth's prestate tracer (from anvil the node asks Parity's stateDiff
// first: the lies are told in both).
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { EXECUTED_ONLY, digestDatadir } from '@chainnode/store';
import { Sfc32, cliBin, freePort, runCli, tempDir } from '@chainnode/testkit';
import {
  GENESIS,
  compareWithAnvil,
  result,
  startAnvil,
  startFollower,
  txRequest,
  waitSynced as waitSyncedWith,
} from './anvil-upstream.js';
import type { Anvil } from './anvil-upstream.js';
import type { ServeProcess } from './serve-helpers.js';

type Json = Record<string, unknown>;
type LieKind = 'storage' | 'log' | 'status' | 'balance';
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;
const common = createCommonFromGethGenesis(GENESIS as unknown as GethGenesis, { chain: 'custom' });

/** A JSON-RPC proxy to `target` that rewrites one block's answers while `lie` is set. */
class LyingProxy {
  lie: { number: number; kind: LieKind } | undefined;
  /** Lies told, by kind. */
  readonly told = new Map<LieKind, number>();
  private readonly numberOf = new Map<string, number>();
  private server!: Server;
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    const port = await freePort();
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    const upstream = await fetch(this.target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const reply = (await upstream.json()) as Json;
    this.rewrite(body, reply);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply));
  }

  private rewrite(req: Json, reply: Json): void {
    const method = req.method as string;
    const params = req.params as unknown[];
    const r = reply.result as unknown;
    // Remember which number each block hash has (the tracer source asks for traces by hash).
    if ((method === 'eth_getBlockByNumber' || method === 'eth_getBlockByHash') && r !== null && typeof r === 'object') {
      const b = r as Json;
      this.numberOf.set(b.hash as string, Number(b.number));
    }
    const lie = this.lie;
    if (lie === undefined || r === null || r === undefined) return;
    const tell = () => this.told.set(lie.kind, (this.told.get(lie.kind) ?? 0) + 1);
    if (method === 'eth_getBlockReceipts' && Array.isArray(r)) {
      const receipts = r as Json[];
      if (Number(receipts[0]?.blockNumber) !== lie.number) return;
      if (lie.kind === 'status') {
        const rc = receipts[0] as Json;
        rc.status = rc.status === '0x1' ? '0x0' : '0x1';
        tell();
      } else if (lie.kind === 'log') {
        const withLog = receipts.find((x) => (x.logs as Json[]).length > 0);
        const log = (withLog?.logs as Json[] | undefined)?.[0];
        if (log === undefined) return;
        log.data = `0x${'ee'.repeat(32)}`;
        tell();
      }
    } else if (method === 'trace_replayBlockTransactions' && Array.isArray(r)) {
      // Parity's stateDiff (what the node asks anvil for first): one delta's new value changed.
      if (Number(params[0]) !== lie.number) return;
      for (const t of r as Json[]) {
        for (const acct of Object.values(t.stateDiff as Record<string, Json>)) {
          const deltas =
            lie.kind === 'storage'
              ? Object.values((acct.storage ?? {}) as Record<string, Json>)
              : lie.kind === 'balance'
                ? [acct.balance as Json]
                : [];
          for (const d of deltas) {
            const change = typeof d === 'object' && d !== null ? ((d['*'] as Json | undefined) ?? d) : undefined;
            const key = change === undefined ? undefined : 'to' in change ? 'to' : '+' in change ? '+' : undefined;
            if (change === undefined || key === undefined) continue;
            change[key] = lie.kind === 'storage' ? `0x${'0'.repeat(63)}7` : hexN(BigInt(change[key] as string) + 1n);
            tell();
            return;
          }
        }
      }
    } else if ((method === 'debug_traceBlockByHash' || method === 'debug_traceBlockByNumber') && Array.isArray(r)) {
      const asked = method === 'debug_traceBlockByHash' ? this.numberOf.get(params[0] as string) : Number(params[0]);
      if (asked !== lie.number) return;
      for (const t of r as Json[]) {
        const post = (t.result as Json).post as Record<string, Json>;
        for (const acct of Object.values(post)) {
          if (lie.kind === 'storage' && acct.storage !== undefined) {
            const slots = acct.storage as Record<string, string>;
            const slot = Object.keys(slots)[0] as string;
            slots[slot] = `0x${'0'.repeat(63)}7`;
            tell();
            return;
          }
          if (lie.kind === 'balance' && acct.balance !== undefined) {
            acct.balance = hexN(BigInt(acct.balance as string) + 1n);
            tell();
            return;
          }
        }
      }
    }
  }
}

/** A logger contract (for storage writes and logs) deployed in a block of its own; its address. */
async function deployLogger(anvilUrl: string): Promise<string> {
  await result(anvilUrl, 'eth_sendTransaction', [txRequest(5, 0, undefined)]);
  await result(anvilUrl, 'evm_mine', []);
  const blk = await result<Json>(anvilUrl, 'eth_getBlockByNumber', ['latest', true]);
  const receipt = await result<Json>(anvilUrl, 'eth_getTransactionReceipt', [(blk.transactions as Json[])[0]?.hash]);
  return receipt.contractAddress as string;
}

describe('replication from a lying upstream', () => {
  let anvil: Anvil;
  let proxy: LyingProxy;
  let node: ServeProcess;
  let ours: string;
  let temp: { dir: string; cleanup: () => Promise<void> };
  let genesisPath: string;
  const loggers: string[] = [];
  let txCounter = 0;

  beforeAll(async () => {
    temp = await tempDir('replicate-lies-');
    anvil = await startAnvil(temp.dir, ['--no-mining']);
    proxy = new LyingProxy(anvil.url);
    await proxy.start();
    loggers.push(await deployLogger(anvil.url));
    txCounter = 1;
    await mine(10);
    const args = ['--ingest', 'replicate', '--threads', '1'];
    ({ node, ours, genesisPath } = await startFollower(temp.dir, proxy.url, GENESIS, args));
    await waitSynced();
  }, 120_000);

  afterAll(async () => {
    await node?.stop('SIGTERM');
    await proxy?.stop();
    await anvil?.stop();
    await temp?.cleanup();
  });

  /** Mines `blocks` blocks of the workload; every block has a storage-writing, logging call. */
  async function mine(blocks: number): Promise<void> {
    for (let b = 0; b < blocks; b++) {
      for (let t = 0; t < 1 + (b % 4); t++) {
        const i = txCounter++;
        await result(anvil.url, 'eth_sendTransaction', [txRequest(t === 0 ? 3 : i, i, loggers[0])]);
      }
      await result(anvil.url, 'evm_mine', []);
    }
  }

  async function health(): Promise<Json> {
    return (await (await fetch(`${node.base}/health`)).json()) as Json;
  }

  const waitSynced = () => waitSyncedWith(anvil.url, ours, () => node.output());

  const FIELD: Record<LieKind, RegExp> = {
    storage: /stateRoot mismatch/,
    balance: /stateRoot mismatch/,
    log: /receiptsRoot mismatch/,
    status: /receiptsRoot mismatch/,
  };

  test.each(['storage', 'log', 'status', 'balance'] as LieKind[])(
    'a lie about one %s is caught at its block, nothing of it is written, and the node follows on once the lie stops',
    async (kind) => {
      const head = Number(await result<string>(anvil.url, 'eth_blockNumber', []));
      const target = head + 1;
      proxy.lie = { number: target, kind };
      await mine(3);
      const t0 = Date.now();
      let h: Json = {};
      for (;;) {
        h = await health();
        const f = h.follow as Json;
        if (typeof f.lastError === 'string' && f.lastError.startsWith(`block ${target}:`)) break;
        if (Date.now() - t0 > 30_000)
          throw new Error(`lie not caught: ${JSON.stringify(h)}\n${node.output().slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const f = h.follow as Json;
      expect(f.lastError).toMatch(
        new RegExp(`^block ${target}: ${FIELD[kind].source}: upstream says 0x[0-9a-f]{64}, computed 0x[0-9a-f]{64}$`),
      );
      expect(f.state).toBe('retrying');
      expect(proxy.told.get(kind)).toBeGreaterThan(0);
      // Nothing of the lying block is written; the verified chain below it is served.
      expect(f.localHead).toBe(head);
      expect(await result(ours, 'eth_getBlockByNumber', [hexN(target), false])).toBeNull();
      expect(await result(ours, 'eth_blockNumber', [])).toBe(hexN(head));
      proxy.lie = undefined;
      await waitSynced();
      // The serving thread's status takes each commit's head as it applies the commit: /health
      // never shows less than what was just served.
      expect(((await health()).follow as Json).localHead).toBe(head + 3);
    },
    90_000,
  );

  test('after the lies: every block, transaction, log, slot and proof equals anvil', async () => {
    await mine(5);
    await waitSynced();
    const seen = await compareWithAnvil(anvil.url, ours, { common, loggers });
    expect(seen.blocks).toBeGreaterThan(25);
    expect(seen.logs).toBeGreaterThan(20);
  }, 120_000);

  test('sync --ingest replicate killed at random moments and resumed equals an uninterrupted replication, an executing sync, and a replication through the prestate tracer', async () => {
    const rng = new Sfc32(0x5eed, 1, 2, 3);
    const killed = join(temp.dir, 'killed');
    const whole = join(temp.dir, 'whole');
    const executed = join(temp.dir, 'executed');
    const head = Number(await result<string>(anvil.url, 'eth_blockNumber', []));
    const args = (dir: string, ingest: string) => [
      'sync',
      '--from',
      anvil.url,
      '--genesis',
      genesisPath,
      '--ingest',
      ingest,
      '--to',
      String(head),
      '--datadir',
      dir,
      '--group-blocks',
      '2',
    ];
    // The uninterrupted run first: its length is the span the kills are drawn from, so they land
    // while blocks are being written on a fast machine as on a slow one.
    const started = Date.now();
    const wholeRun = await runCli(args(whole, 'replicate'));
    expect(wholeRun.code).toBe(0);
    let span = Date.now() - started;
    let kills = 0;
    for (let round = 0; round < 12; round++) {
      const child = spawn(process.execPath, [cliBin(), ...args(killed, 'replicate')], { stdio: 'ignore' });
      const delay = Math.floor(span * (0.2 + 0.7 * rng.next()));
      const timer = setTimeout(() => child.kill('SIGKILL'), delay);
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      clearTimeout(timer);
      if (code === null) kills++;
      else if (kills > 0) break;
      else {
        // Finished before the kill: start over from nothing, killing earlier.
        expect(code).toBe(0);
        await rm(killed, { recursive: true, force: true });
        span = Math.max(50, Math.floor(span / 2));
      }
    }
    expect(kills).toBeGreaterThan(0);
    const finish = await runCli(args(killed, 'replicate'));
    expect(finish.code).toBe(0);
    expect((await runCli(args(executed, 'execute'))).code).toBe(0);
    // From anvil the node asks Parity's stateDiff first; the same chain through geth's prestate tracer.
    expect(wholeRun.stderr).toContain('state changes from trace_replayBlockTransactions stateDiff');
    const prestate = await runCli([...args(join(temp.dir, 'prestate'), 'replicate'), '--state-source', 'prestate']);
    expect(prestate.code).toBe(0);
    expect(prestate.stderr).toContain('state changes from debug_traceBlockByHash with the prestateTracer in diffMode');
    const [dk, dw, de, dp] = await Promise.all([
      digestDatadir(killed, undefined, EXECUTED_ONLY),
      digestDatadir(whole, undefined, EXECUTED_ONLY),
      digestDatadir(executed, undefined, EXECUTED_ONLY),
      digestDatadir(join(temp.dir, 'prestate'), undefined, EXECUTED_ONLY),
    ]);
    expect(dk).toEqual(dw);
    expect(dw).toEqual(de);
    expect(dp).toEqual(de);
  }, 240_000);
});
