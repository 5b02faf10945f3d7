// Helpers for the subscription tests: a real server in this process over a copy of a real
// datadir, fed by a ChainEvents source the test drives, and raw WebSocket clients.
import { createRequire } from 'node:module';
import type { LookupFunction } from 'node:net';
import type { ChainCommit, ChainCommitListener, ChainEvents, ChainStore, CommittedBlock } from '@chainnode/core';
import { createRpcService, resolveConfig } from '@chainnode/rpc';
import type { RpcServiceApi } from '@chainnode/rpc';
import { NetworkRuntime, startServer } from '@chainnode/server';
import { parseConfig, rpcConfigOf, transportConfigOf } from '@chainnode/runtime';
import { createKey, openLedger } from '@chainnode/accounts';
import type { RunningServer, ServerOptions } from '@chainnode/server';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';

/** A ChainEvents source the test publishes to (what `serve --follow` does after each durable batch). */
export class TestChainEvents implements ChainEvents {
  private readonly listeners = new Set<ChainCommitListener>();
  subscribe(listener: ChainCommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  publish(commit: ChainCommit): void {
    for (const l of this.listeners) l(commit);
  }
  get listenerCount(): number {
    return this.listeners.size;
  }
}

/** The committed-block record of canonical block `n`, its logs read back from the store. */
export async function committedBlock(store: ChainStore, n: bigint): Promise<CommittedBlock> {
  const hash = await store.canonicalHash(n);
  if (hash === undefined) throw new Error(`block ${n} not in the store`);
  const r = await store.logs(
    { fromBlock: n, toBlock: n, addresses: [], topics: [] },
    { limit: 1_000_000, deadline: Date.now() + 60_000 },
  );
  if (r.kind !== 'ok') throw new Error('too many logs');
  return { number: n, hash, logs: r.logs };
}

/** A commit that adds canonical blocks `from..to` of the store. */
export async function commitOf(store: ChainStore, from: bigint, to: bigint): Promise<ChainCommit> {
  const added: CommittedBlock[] = [];
  for (let n = from; n <= to; n++) added.push(await committedBlock(store, n));
  const last = added[added.length - 1] as CommittedBlock;
  return { removed: [], added, head: { number: last.number, hash: last.hash } };
}

export interface SubsServer {
  srv: RunningServer;
  store: ChainStore;
  events: TestChainEvents;
  datadir: string;
  key: string;
  http: string;
  ws: (key?: string) => string;
  newKey: (dailyCredits?: number) => Promise<string>;
  stop: () => Promise<void>;
}

/** A real server (real rpc service, real store of `chain`) with a test ChainEvents source. */
export async function startSubsServer(config: Record<string, unknown> = {}): Promise<SubsServer> {
  const events = new TestChainEvents();
  const s = await startServerOver(config, (store, service) => ({ service, store, chainEvents: events }));
  return { ...s, events, http: `http://127.0.0.1:${s.srv.port}/v3/${s.key}` };
}

export interface NetworksSubsServer extends Omit<SubsServer, 'events' | 'http' | 'ws'> {
  /** Each network's ChainEvents source, by name. */
  events: Map<string, TestChainEvents>;
  /** The WebSocket address of `network` (its name as the Host's first label). */
  ws: (network: string, key?: string) => string;
}

/**
 * A real server with one network per name, routed by Host (docs/networks.md): each network its
 * own rpc service, subscription hub and ChainEvents source, all over one copy of the fixture
 * datadir (the chain they serve is not the subject).
 */
export async function startNetworksSubsServer(names: string[]): Promise<NetworksSubsServer> {
  const events = new Map(names.map((name) => [name, new TestChainEvents()]));
  const s = await startServerOver({}, (store, service) => ({
    networks: names.map(
      (name) => new NetworkRuntime({ name, store, service, chainEvents: events.get(name) as TestChainEvents }),
    ),
  }));
  return { ...s, events, ws: (network, k = s.key) => `ws://${network}.localhost:${s.srv.port}/ws/v3/${k}` };
}

/** startServer over a copy of the fixture datadir, its ledger and a key of the custom plan. */
async function startServerOver(
  config: Record<string, unknown>,
  chains: (store: ChainStore, service: RpcServiceApi) => Partial<ServerOptions>,
): Promise<Omit<SubsServer, 'events' | 'http'>> {
  const { dir, cleanup } = await datadirCopy('fixtures');
  const store = await openChainStore(dir);
  const cfg = parseConfig({ offloadWorkers: 0, ...config });
  const service = createRpcService(store, resolveConfig(rpcConfigOf(cfg)));
  const accounts = await openLedger({ datadir: dir });
  const srv = await startServer({
    ...chains(store, service),
    ledger: { keys: accounts.keys, credits: accounts.ledger() },
    usage: accounts.usageRecord(),
    config: transportConfigOf(cfg),
    host: '127.0.0.1',
    port: 0,
  });
  const key = (await createKey(dir, { plan: 'custom' })).key;
  await srv.keys.reload();
  return {
    srv,
    store,
    datadir: dir,
    key,
    ws: (k = key) => `ws://127.0.0.1:${srv.port}/ws/v3/${k}`,
    newKey: async (dailyCredits) => {
      const created = await createKey(dir, { plan: 'core', ...(dailyCredits !== undefined ? { dailyCredits } : {}) });
      await srv.keys.reload(); // the server sees it now, not at its next watch tick
      return created.key;
    },
    stop: async () => {
      await srv.close();
      await accounts.close();
      await store.close();
      await cleanup();
    },
  };
}

interface RawWs {
  on(event: 'message', f: (data: Buffer) => void): void;
  on(event: 'close', f: (code: number, reason: Buffer) => void): void;
  on(event: 'open', f: () => void): void;
  on(event: 'error', f: (err: Error) => void): void;
  on(event: 'unexpected-response', f: (req: unknown, res: { statusCode: number }) => void): void;
  send(data: string): void;
  close(): void;
  terminate(): void;
  readyState: number;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (url: string, opts: { lookup: LookupFunction }) => RawWs;

/** Every name resolves to the loopback: `<network>.localhost` reaches the test's server with that Host. */
const loopback = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
  if (opts?.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

export interface JsonMessage {
  jsonrpc: string;
  id?: unknown;
  result?: unknown;
  error?: { code: number; event?: number; message: string; details?: string; data?: unknown };
  method?: string;
  params?: { subscription: string; result: Record<string, unknown> };
}

/** A WebSocket client that keeps every message, with request/response by id. */
export class WsClient {
  readonly messages: JsonMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private nextId = 1;
  private readonly waiting = new Map<unknown, (m: JsonMessage) => void>();
  private watchers: (() => void)[] = [];
  private constructor(readonly ws: RawWs) {
    let done!: (v: { code: number; reason: string }) => void;
    this.closed = new Promise((r) => (done = r));
    ws.on('close', (code, reason) => done({ code, reason: reason.toString('utf8') }));
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString('utf8')) as JsonMessage;
      this.messages.push(m);
      if (m.id !== undefined && m.id !== null && this.waiting.has(m.id)) {
        const w = this.waiting.get(m.id) as (m: JsonMessage) => void;
        this.waiting.delete(m.id);
        w(m);
      }
      for (const f of this.watchers) f();
    });
  }

  static open(url: string): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WsCtor(url, { lookup: loopback });
      ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.on('error', reject);
      ws.on('open', () => resolve(new WsClient(ws)));
    });
  }

  call(method: string, params: unknown[]): Promise<JsonMessage> {
    const id = this.nextId++;
    return this.send({ jsonrpc: '2.0', id, method, params }, id);
  }

  send(msg: unknown, id: unknown): Promise<JsonMessage> {
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
    });
  }

  async subscribe(params: unknown[]): Promise<string> {
    const r = await this.call('eth_subscribe', params);
    if (typeof r.result !== 'string') throw new Error(`subscribe failed: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  notifications(sub?: string): { subscription: string; result: Record<string, unknown> }[] {
    return this.messages.flatMap((m) =>
      m.method === 'eth_subscription' && m.params !== undefined && (sub === undefined || m.params.subscription === sub)
        ? [m.params]
        : [],
    );
  }

  /** Resolves once `pred` holds over the messages received so far (or rejects after `ms`). */
  until(pred: () => boolean, ms = 20_000): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.watchers = this.watchers.filter((w) => w !== check);
        reject(new Error(`timed out after ${ms} ms (${this.messages.length} messages)`));
      }, ms);
      const check = (): void => {
        if (!pred()) return;
        clearTimeout(timer);
        this.watchers = this.watchers.filter((w) => w !== check);
        resolve();
      };
      this.watchers.push(check);
    });
  }

  close(): void {
    this.ws.close();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
