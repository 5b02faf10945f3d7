// Several networks (chains) in one process, one port: each network is a NetworkRuntime (its own
// store with its caches, its rpc service with its offload workers, its metrics series, its health),
// and the NetworkRouter picks the runtime of a request from its Host header, as Infura's base
// addresses do (`mainnet.infura.io`, `sepolia.infura.io`; here `<name>.<anything>`, e.g.
// `mainnet.localhost:8545`). Keys, credits and limits are one account across all networks and
// stay outside the runtimes (the server's Gate).
//
// Routing rules (docs/networks.md):
//   1. the first label of the Host (lowercased, port stripped) names a configured network: that one;
//   2. else, when a default network is set and the Host is bare (an IP literal, a single label
//      such as `localhost`, or no Host at all): the default network;
//   3. else: unknown network (404). A host like `mainnt.localhost` (a typo) is refused rather than
//      answered from some other chain.
// A server started the old way (`serve --datadir D`, one implicit network) answers every Host
// from its one network (catch-all), exactly as before networks existed.
import type { ChainEvents, ChainStore } from '@chainnode/core';
import type { RpcServiceApi } from '@chainnode/rpc';
import { networkNameProblem } from '@chainnode/accounts/settings';
import { Metrics } from './metrics.js';
import type { DiskView, FollowReport } from './metrics.js';

/** The disk gauges are sampled at most this often (walking a datadir reads every directory entry). */
const DISK_SAMPLE_MS = 30_000;
/** Name of the one network of a server started without networks (`serve --datadir D`). */
export const IMPLICIT_NETWORK = 'default';
/** At most this many networks per process (each holds a store, caches and offload workers). */
export const MAX_NETWORKS = 32;

/** What a caller (the CLI) builds for one network before the server owns it. */
export interface NetworkParts {
  name: string;
  /** The network's store (for health and the head-block gauge; the service has its own reference). */
  store: ChainStore;
  service: RpcServiceApi;
  /** Releases what the network holds beyond the store (offload workers, a follower): run before the store closes. */
  stop?: () => Promise<void>;
  /** Closes the store; the default is store.close(). */
  closeStore?: () => Promise<void>;
  /**
   * The one network of a server started without networks (`serve --datadir D`): it answers every
   * Host and its metrics carry no `network` label, exactly as before networks existed.
   */
  implicit?: boolean;
  /** Commits of this network's follower (`follow=<URL>`), for consumers such as eth_subscribe. */
  chainEvents?: ChainEvents;
  /** State of this network's follower, for /health and its metrics. */
  ingestStatus?: () => FollowReport;
  /** The size of the network's datadir and its filesystem's free space (the disk gauges). */
  disk?: () => Promise<DiskView>;
}

export interface NetworkHealth {
  status: 'ok' | 'store unavailable';
  head?: string;
  number?: number;
  /** The follower's state, on a network that follows an upstream. */
  follow?: Record<string, unknown>;
  /** The state trie's retention (`--state-trie`): `archive`, or `window` with its blocks and the block its trie is complete from. */
  stateTrie?: { mode: 'archive' } | { mode: 'window'; blocks: number; trieFrom: number };
}

/** /health's view of the store's state trie window (absent on stores without the setting). */
function stateTrieJson(store: ChainStore): NetworkHealth['stateTrie'] {
  const w = store.stateTrie?.(true);
  if (w === undefined) return undefined;
  return w.mode === 'archive' ? w : { mode: 'window', blocks: w.blocks, trieFrom: Number(w.trieFrom) };
}

function ingestJson(v: FollowReport): Record<string, unknown> {
  return {
    state: v.state,
    upstream: v.upstream,
    upstreamHead: v.upstreamHead === undefined ? null : Number(v.upstreamHead),
    localHead: Number(v.localHead),
    lagBlocks: Number(v.lagBlocks),
    lagSeconds: v.lagSeconds,
    reorgs: v.reorgs,
    blocksImported: v.blocksImported,
    lastError: v.lastError ?? null,
    lastErrorAt: v.lastErrorAt === undefined ? null : new Date(v.lastErrorAt).toISOString(),
    firstBlock: Number(v.firstBlock),
    ...(v.stateDownload !== undefined
      ? { stateDownload: { ...v.stateDownload, block: Number(v.stateDownload.block) } }
      : {}),
    ...(v.provenState !== undefined ? { provenState: { ...v.provenState } } : {}),
    ...(v.historyUpstream !== undefined ? { historyUpstream: { ...v.historyUpstream } } : {}),
  };
}

/** One network served by the process: routing target of the server. */
export class NetworkRuntime {
  readonly name: string;
  readonly store: ChainStore;
  readonly service: RpcServiceApi;
  /** This network's series; rendered with a `network` label next to the others. */
  readonly metrics: Metrics;
  readonly implicit: boolean;
  /** Commits of this network's follower, if it follows an upstream. */
  readonly chainEvents: ChainEvents | undefined;
  private closing: Promise<void> | undefined;
  private diskSampledAt = 0;
  private diskSample: Promise<void> | undefined;

  constructor(private readonly parts: NetworkParts) {
    const problem = networkNameProblem(parts.name);
    if (problem !== undefined) throw new Error(problem);
    this.name = parts.name;
    this.store = parts.store;
    this.service = parts.service;
    this.implicit = parts.implicit === true;
    this.metrics = new Metrics(this.implicit ? undefined : parts.name);
    this.metrics.ingest = parts.ingestStatus;
    const answers = parts.service.answers;
    if (answers !== undefined) this.metrics.callCache = () => answers.stats();
    this.chainEvents = parts.chainEvents;
  }

  /** Reads the head; a failing store reports `store unavailable` (and -1 in the head gauge). */
  async health(): Promise<NetworkHealth> {
    const follow = this.parts.ingestStatus === undefined ? {} : { follow: ingestJson(this.parts.ingestStatus()) };
    try {
      const head = await this.store.head();
      this.metrics.headBlock = Number(head.number);
      const stateTrie = stateTrieJson(this.store);
      return {
        status: 'ok',
        head: `0x${head.number.toString(16)}`,
        number: Number(head.number),
        ...(stateTrie !== undefined ? { stateTrie } : {}),
        ...follow,
      };
    } catch {
      this.metrics.headBlock = -1;
      return { status: 'store unavailable', ...follow };
    }
  }

  /** Refreshes the disk gauges when the last sample is older than DISK_SAMPLE_MS (never rejects). */
  refreshDisk(): Promise<void> {
    const disk = this.parts.disk;
    if (disk === undefined || Date.now() - this.diskSampledAt < DISK_SAMPLE_MS) return Promise.resolve();
    this.diskSample ??= disk().then(
      (v) => {
        this.metrics.disk = v;
        this.diskSampledAt = Date.now();
        this.diskSample = undefined;
      },
      () => {
        this.diskSample = undefined;
      },
    );
    return this.diskSample;
  }

  /** Stops offload workers (and a follower), then closes the store. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.parts.stop?.();
      } finally {
        await (this.parts.closeStore ?? (() => this.parts.store.close()))();
      }
    })();
    return this.closing;
  }
}

export interface RouterOptions {
  /** Answers bare hosts (IP literals, single labels like `localhost`, no Host). */
  defaultNetwork?: string;
}

/** The first label of a Host header, or undefined for a bare host. */
export function hostLabel(host: string): string | undefined {
  let h = host.trim().toLowerCase();
  if (h === '' || h.startsWith('[')) return undefined; // no Host, or an IPv6 literal
  const colon = h.lastIndexOf(':');
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1); // absolute form "mainnet.example."
  const dot = h.indexOf('.');
  if (dot < 0) return undefined; // a single label: localhost, a machine name
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(h)) return undefined; // IPv4 literal
  return h.slice(0, dot);
}

export class NetworkRouter {
  private readonly byName = new Map<string, NetworkRuntime>();
  private readonly fallback: NetworkRuntime | undefined;
  private readonly catchAll: boolean;

  constructor(
    readonly networks: readonly NetworkRuntime[],
    opts: RouterOptions = {},
  ) {
    if (networks.length === 0) throw new Error('no network to serve');
    if (networks.length > MAX_NETWORKS) throw new Error(`at most ${MAX_NETWORKS} networks per process`);
    for (const n of networks) {
      if (this.byName.has(n.name)) throw new Error(`network "${n.name}" is configured twice`);
      this.byName.set(n.name, n);
    }
    // Every Host goes to the one network of a server started without networks.
    this.catchAll = networks.some((n) => n.implicit);
    if (this.catchAll && networks.length !== 1)
      throw new Error('the implicit network (serve --datadir) cannot be combined with other networks');
    if (opts.defaultNetwork !== undefined) {
      const d = this.byName.get(opts.defaultNetwork);
      if (d === undefined)
        throw new Error(
          `default network "${opts.defaultNetwork}" is not among the networks (${this.names().join(', ')})`,
        );
      this.fallback = d;
    } else if (this.catchAll) this.fallback = networks[0];
  }

  /** True for a server started without networks: one network, every Host, unlabelled metrics. */
  get single(): boolean {
    return this.catchAll;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): NetworkRuntime | undefined {
    return this.byName.get(name);
  }

  /** True when a Host reaches the whole process rather than one network (bare host, multi-network). */
  isProcessHost(host: string): boolean {
    return !this.catchAll && hostLabel(host) === undefined;
  }

  /** The runtime a Host header selects, or undefined for an unknown network. */
  route(host: string): NetworkRuntime | undefined {
    if (this.catchAll) return this.fallback;
    const label = hostLabel(host);
    if (label === undefined) return this.fallback;
    return this.byName.get(label);
  }

  /** The network name an unroutable Host asked for (for the error message; bounded, never echoed raw). */
  static askedFor(host: string): string {
    const label = hostLabel(host) ?? '';
    return /^[a-z0-9-]{1,63}$/.test(label) ? label : '(invalid host)';
  }

  /**
   * Process health: `ok` (200) when every network's store answers, `degraded` (200) when some do,
   * `unavailable` (503) when none does, `stopping` (503) during shutdown. A load balancer that
   * must not route a network whose store failed checks `GET http://<network>.<host>/health`.
   */
  async health(stopping: boolean): Promise<{ ok: boolean; body: Record<string, unknown> }> {
    const list = await Promise.all(this.networks.map(async (n) => [n.name, await n.health()] as const));
    const up = list.filter(([, h]) => h.status === 'ok').length;
    const status = stopping ? 'stopping' : up === list.length ? 'ok' : up > 0 ? 'degraded' : 'unavailable';
    return { ok: !stopping && up > 0, body: { status, networks: Object.fromEntries(list) } };
  }

  /** Closes every network (in parallel: their stores and workers are independent). */
  async close(): Promise<void> {
    const results = await Promise.allSettled(this.networks.map((n) => n.close()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
