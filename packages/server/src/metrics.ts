// Prometheus text exposition (format 0.0.4) for the few series we keep: requests by method
// and outcome, latency histograms per method, credits charged per method, HTTP responses by
// status, open WebSockets, and the head block. No key (or key hash) ever appears in a label.
// Each network of the process keeps its own Metrics (label `network="<name>"`); responses that
// reach no network (unknown network, preflight, process health) go to an unlabelled one, and
// Metrics.renderAll writes every family once with all their series.

import type { FollowStatus } from '@chainnode/core';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * What /health and the metrics show of a follower: its ingest's FollowStatus, with what the
 * serving side's upstream layers counted.
 */
export interface FollowReport extends FollowStatus {
  /** State proven on demand from the upstream (a joined datadir): counts since start. */
  provenState?: ProvenStateView;
  /** History below the first block from a history upstream (--history-upstream): counts since start. */
  historyUpstream?: HistoryUpstreamView;
}

/** What the history layer counted (ingest's HistoryStats fits it), and whom it asks. */
export interface HistoryUpstreamView {
  origin: string;
  fetches: number;
  headers: number;
  blocks: number;
  rejected: number;
  failed: number;
}

/** What the proven-state layer counted (ingest's ProvenStateStats fits it). */
export interface ProvenStateView {
  fetches: number;
  verified: number;
  rejected: number;
  failed: number;
  cold: number;
}

/** How a JSON-RPC call ended (label `outcome`). */
export const OUTCOMES = ['ok', 'error', 'no_credits', 'unauthorized', 'failover'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Why the server closed a connection (label `reason` of chainnode_connections_cut_total). */
export const CUT_REASONS = ['queue', 'connection_budget', 'process_budget', 'slow_reader'] as const;
export type CutReason = (typeof CUT_REASONS)[number];

/** One metric family: what the exposition's HELP and TYPE lines say and the generated reference lists. */
export interface MetricFamily {
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /** Labels of its series, besides `network` (below) and a histogram's `le`. */
  readonly labels: readonly string[];
  /** 'network': one series set per network, labelled `network="<name>"` on a server with networks; 'process': the process's. */
  readonly scope: 'network' | 'process';
  /**
   * When it is written: always; only by a network that follows an upstream; only by `serve
   * --threads`; only for a network served from a datadir (`serve`); only with the Redis ledger.
   */
  readonly written: 'always' | 'follow' | 'threads' | 'datadir' | 'redis';
}

/** The kinds of eth_subscribe subscriptions (label `kind` of chainnode_subscriptions). */
const SUBSCRIPTION_KINDS = ['newHeads', 'logs', 'newPendingTransactions'] as const;

/** The values a label takes, where the code fixes them. */
export const LABEL_VALUES: Readonly<Record<string, readonly string[]>> = {
  outcome: OUTCOMES,
  transport: ['http', 'ws'],
  reason: CUT_REASONS,
  failure: ['open', 'closed'],
  result: ['hit', 'miss'],
  kind: SUBSCRIPTION_KINDS,
};

/**
 * Every family the server exposes, in exposition order: the one list both the exposition (HELP,
 * TYPE) and the generated reference (docs/reference/metrics.md) read.
 */
export const METRIC_FAMILIES = {
  chainnode_rpc_calls_total: {
    type: 'counter',
    help: 'JSON-RPC calls by method and outcome.',
    labels: ['method', 'outcome'],
    scope: 'network',
    written: 'always',
  },
  chainnode_rpc_call_duration_seconds: {
    type: 'histogram',
    help: 'Time from dispatch to answer per call.',
    labels: ['method'],
    scope: 'network',
    written: 'always',
  },
  chainnode_credits_charged_total: {
    type: 'counter',
    help: 'Credits charged, by method.',
    labels: ['method'],
    scope: 'network',
    written: 'always',
  },
  chainnode_responses_total: {
    type: 'counter',
    help: 'Transport responses by status (WebSocket: 101 per accepted upgrade).',
    labels: ['transport', 'status'],
    scope: 'network',
    written: 'always',
  },
  chainnode_websocket_connections: {
    type: 'gauge',
    help: 'Open WebSocket connections.',
    labels: [],
    scope: 'network',
    written: 'always',
  },
  chainnode_subscriptions: {
    type: 'gauge',
    help: 'Live eth_subscribe subscriptions, by kind.',
    labels: ['kind'],
    scope: 'network',
    written: 'always',
  },
  chainnode_reply_bytes_in_flight: {
    type: 'gauge',
    help: 'Reply bytes buffered towards clients (all connections).',
    labels: [],
    scope: 'process',
    written: 'always',
  },
  chainnode_connections_cut_total: {
    type: 'counter',
    help: 'Connections closed by the reply budgets and timeouts, by reason.',
    labels: ['reason'],
    scope: 'process',
    written: 'always',
  },
  chainnode_head_block: {
    type: 'gauge',
    help: 'Number of the newest imported block (-1 when the store is unavailable).',
    labels: [],
    scope: 'network',
    written: 'always',
  },
  chainnode_logs_shed_total: {
    type: 'counter',
    help: 'Offloaded calls refused at once since the offload workers were full (-32005, not charged).',
    labels: [],
    scope: 'network',
    written: 'always',
  },
  chainnode_offloaded_calls_total: {
    type: 'counter',
    help: 'Calls answered by the offload workers (heavy eth_getLogs, eth_call and their kin).',
    labels: [],
    scope: 'network',
    written: 'always',
  },
  chainnode_call_cache_lookups_total: {
    type: 'counter',
    help: 'eth_call, eth_estimateGas and eth_createAccessList calls by result (hit: answered from the kept answers).',
    labels: ['result'],
    scope: 'network',
    written: 'always',
  },
  chainnode_call_cache_bytes: {
    type: 'gauge',
    help: 'Bytes of kept call answers (callCacheBytes bounds each app thread).',
    labels: [],
    scope: 'network',
    written: 'always',
  },
  chainnode_datadir_bytes: {
    type: 'gauge',
    help: "Bytes on disk in the network's datadir (chain, log index).",
    labels: [],
    scope: 'network',
    written: 'datadir',
  },
  chainnode_datadir_filesystem_free_bytes: {
    type: 'gauge',
    help: "Bytes free to an unprivileged writer on the filesystem holding the network's datadir.",
    labels: [],
    scope: 'network',
    written: 'datadir',
  },
  chainnode_ledger_degraded: {
    type: 'gauge',
    help: '1 while the Redis ledger is unreachable: paid calls are decided locally and journaled (failure="open") or refused (failure="closed").',
    labels: ['failure'],
    scope: 'process',
    written: 'redis',
  },
  chainnode_ledger_journal_charges: {
    type: 'gauge',
    help: 'Charges journaled locally, waiting for the Redis ledger to return.',
    labels: [],
    scope: 'process',
    written: 'redis',
  },
  // A follower's gauges (serve --follow), written only by a network that follows an upstream.
  chainnode_follow_upstream_head_block: {
    type: 'gauge',
    help: 'Head block number the upstream last reported (-1 before its first answer).',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_local_head_block: {
    type: 'gauge',
    help: 'Newest block the follower has verified and committed.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_lag_blocks: {
    type: 'gauge',
    help: 'Upstream head minus local head.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_lag_seconds: {
    type: 'gauge',
    help: "Upstream head's timestamp minus local head's timestamp.",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_reorgs: {
    type: 'gauge',
    help: 'Reorgs (and rollbacks) applied since start.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_blocks_imported: {
    type: 'gauge',
    help: 'Blocks committed since start.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_failed: {
    type: 'gauge',
    help: '1 when a verification failure (or a too-deep reorg) stopped the ingest; serving continues on the verified prefix.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_upstream_up: {
    type: 'gauge',
    help: '0 while the upstream is failing and being retried.',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_first_block: {
    type: 'gauge',
    help: 'First block the datadir holds: 0, or the block it joined its chain at (--start-block).',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_join_state_nodes: {
    type: 'gauge',
    help: "A datadir joined with --join-state download: trie nodes of its first block's state held so far (downloaded or found stored by this process).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_join_state_whole: {
    type: 'gauge',
    help: "A datadir joined with --join-state download: 1 once its first block's whole state is held, 0 while it is downloaded.",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_proven_state_fetches_total: {
    type: 'counter',
    help: "State proofs and code fetched from the upstream for state the store did not hold (this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_proven_state_rejected_total: {
    type: 'counter',
    help: "Upstream proofs or code that did not verify against the node's own state roots: refused, never served (this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_proven_state_failed_total: {
    type: 'counter',
    help: "Proof fetches the upstream did not answer (down, slow, an error) (this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_history_upstream_fetches_total: {
    type: 'counter',
    help: "Requests to the history upstream for history below the first block (--history-upstream; this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_history_upstream_rejected_total: {
    type: 'counter',
    help: "History upstream answers that did not match the node's own headers: refused, never served (this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_history_upstream_failed_total: {
    type: 'counter',
    help: "History upstream requests not answered (down, slow, an error, a block it lacks) (this thread's).",
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  chainnode_follow_last_error_timestamp_seconds: {
    type: 'gauge',
    help: 'Unix time of the last upstream or ingest error (0: none).',
    labels: [],
    scope: 'network',
    written: 'follow',
  },
  // serve --threads: written by thread 0 after the other families (Metrics.renderThreadCalls).
  chainnode_thread_rpc_calls_total: {
    type: 'counter',
    help: 'JSON-RPC calls by app thread (serve --threads).',
    labels: ['thread'],
    scope: 'process',
    written: 'threads',
  },
} as const satisfies Record<string, MetricFamily>;

export type MetricName = keyof typeof METRIC_FAMILIES;

/** The HELP and TYPE lines of a family. */
function header(name: MetricName): string[] {
  const f: MetricFamily = METRIC_FAMILIES[name];
  return [`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`];
}

/**
 * The additive part of a Metrics instance as plain data (structured-clone safe): what another app
 * thread of `serve --threads` sends to thread 0, which adds it to its own before rendering, so
 * /metrics covers every thread. Gauges that every thread shares (head block, a follower's
 * status) are not in it; open WebSockets and reply bytes buffered are summed.
 */
export interface MetricsCounts {
  methods: [
    method: string,
    series: { calls: [Outcome, number][]; buckets: number[]; sum: number; count: number; credits: number | undefined },
  ][];
  http: [number, number][];
  ws: [number, number][];
  wsOpen: number;
  subscriptions: SubscriptionsView;
  replyBytesInFlight: number;
  cuts: [CutReason, number][];
  offloadShed: number;
  offloaded: number;
  callCache: CallCacheView;
}

/** Live subscriptions by kind (label `kind` of chainnode_subscriptions). */
export interface SubscriptionsView {
  newHeads: number;
  logs: number;
  newPendingTransactions: number;
}

/** What the kept call answers counted (rpc's AnswerCacheStats fits it). */
export interface CallCacheView {
  hits: number;
  misses: number;
  bytes: number;
}

/** What the disk gauges show of a network's datadir (sampled at most every DISK_SAMPLE_MS). */
export interface DiskView {
  datadirBytes: number;
  freeBytes: number;
}

/** The Redis ledger's state, for its gauges (absent with the embedded ledger). */
export interface LedgerView {
  failure: 'open' | 'closed';
  degraded: boolean;
  journalCharges: number;
}

const addTo = <K>(m: Map<K, number>, k: K, v: number): void => {
  m.set(k, (m.get(k) ?? 0) + v);
};

class Histogram {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  sum = 0;
  count = 0;
  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (seconds <= (BUCKETS[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        return;
      }
    }
  }
}

function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Per method: calls by outcome, the latency histogram, credits charged. */
class MethodSeries {
  readonly calls = new Map<Outcome, number>();
  readonly latency = new Histogram();
  /** Undefined until the method is first charged (a 0-credit method then shows 0). */
  credits: number | undefined;
}

export class Metrics {
  // Nested maps, no composite string keys: the hot path builds no strings.
  private readonly methods = new Map<string, MethodSeries>();
  private readonly statuses = { http: new Map<number, number>(), ws: new Map<number, number>() };
  wsOpen = 0;
  /** Reply bytes buffered towards clients (set before each render). */
  replyBytesInFlight = 0;
  /** Connections closed by the reply budgets and timeouts, by reason. */
  readonly cuts = new Map<CutReason, number>();
  headBlock = -1;
  /** Offloaded calls refused because the offload workers were full (chainnode_logs_shed_total, its former name kept). */
  offloadShed = 0;
  /** Calls the offload workers answered (chainnode_offloaded_calls_total). */
  offloaded = 0;
  /** A follower's ingest state (serve --follow). */
  ingest: (() => FollowReport) | undefined;
  /** The network's kept call answers, read at each render (absent: none kept). */
  callCache: (() => CallCacheView) | undefined;
  /** Other threads' kept call answers, added (sum()). */
  private readonly callCacheAdded: CallCacheView = { hits: 0, misses: 0, bytes: 0 };
  /** The network's live subscriptions, read at each render (absent: none served here). */
  subscriptions: (() => SubscriptionsView) | undefined;
  /** Other threads' live subscriptions, added (sum()). */
  private readonly subscriptionsAdded: SubscriptionsView = { newHeads: 0, logs: 0, newPendingTransactions: 0 };
  /** The datadir's size and its filesystem's free space, last sampled (serve: each network). */
  disk: DiskView | undefined;
  /** The Redis ledger's state (the process-wide instance, with --ledger redis://). */
  ledger: LedgerView | undefined;

  /**
   * `network`: the label of every series of this instance (undefined: unlabelled, as a
   * single-network server has always written them). `routing`: this is the process-wide instance
   * of a multi-network server (it then writes no WebSocket or head gauge of its own).
   */
  constructor(
    readonly network?: string,
    private readonly routing = false,
  ) {}

  private series(method: string): MethodSeries {
    let m = this.methods.get(method);
    if (m === undefined) this.methods.set(method, (m = new MethodSeries()));
    return m;
  }

  call(method: string, outcome: Outcome, seconds: number): void {
    const m = this.series(method);
    m.calls.set(outcome, (m.calls.get(outcome) ?? 0) + 1);
    m.latency.observe(seconds);
  }

  charged(method: string, credits: number): void {
    const m = this.series(method);
    m.credits = (m.credits ?? 0) + credits;
  }

  response(transport: 'http' | 'ws', status: number): void {
    const byStatus = this.statuses[transport];
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  /** The additive counts of this instance (see MetricsCounts). */
  counts(): MetricsCounts {
    return {
      methods: [...this.methods].map(([method, m]) => [
        method,
        {
          calls: [...m.calls],
          buckets: [...m.latency.counts],
          sum: m.latency.sum,
          count: m.latency.count,
          credits: m.credits,
        },
      ]),
      http: [...this.statuses.http],
      ws: [...this.statuses.ws],
      wsOpen: this.wsOpen,
      subscriptions: this.subscriptionsView(),
      replyBytesInFlight: this.replyBytesInFlight,
      cuts: [...this.cuts],
      offloadShed: this.offloadShed,
      offloaded: this.offloaded,
      callCache: this.callCacheView(),
    };
  }

  /** This instance's live subscriptions with the ones added. */
  private subscriptionsView(): SubscriptionsView {
    const own = this.subscriptions?.();
    const view = { ...this.subscriptionsAdded };
    if (own !== undefined) for (const kind of SUBSCRIPTION_KINDS) view[kind] += own[kind];
    return view;
  }

  /** This instance's kept call answers with the ones added. */
  private callCacheView(): CallCacheView {
    const own = this.callCache?.();
    const a = this.callCacheAdded;
    return own === undefined
      ? { ...a }
      : { hits: a.hits + own.hits, misses: a.misses + own.misses, bytes: a.bytes + own.bytes };
  }

  /** Adds `c` (another thread's counts of the same series) to this instance. */
  add(c: MetricsCounts): void {
    for (const [method, x] of c.methods) {
      const m = this.series(method);
      for (const [outcome, n] of x.calls) addTo(m.calls, outcome, n);
      for (let i = 0; i < BUCKETS.length; i++)
        m.latency.counts[i] = (m.latency.counts[i] as number) + (x.buckets[i] ?? 0);
      m.latency.sum += x.sum;
      m.latency.count += x.count;
      if (x.credits !== undefined) m.credits = (m.credits ?? 0) + x.credits;
    }
    for (const [status, n] of c.http) addTo(this.statuses.http, status, n);
    for (const [status, n] of c.ws) addTo(this.statuses.ws, status, n);
    this.wsOpen += c.wsOpen;
    for (const kind of SUBSCRIPTION_KINDS) this.subscriptionsAdded[kind] += c.subscriptions[kind];
    this.replyBytesInFlight += c.replyBytesInFlight;
    for (const [reason, n] of c.cuts) addTo(this.cuts, reason, n);
    this.offloadShed += c.offloadShed;
    this.offloaded += c.offloaded;
    this.callCacheAdded.hits += c.callCache.hits;
    this.callCacheAdded.misses += c.callCache.misses;
    this.callCacheAdded.bytes += c.callCache.bytes;
  }

  /** A copy of this instance with `others` added (its gauges of the head and a follower are this one's). */
  sum(others: readonly MetricsCounts[]): Metrics {
    const out = new Metrics(this.network, this.routing);
    out.add(this.counts());
    for (const c of others) out.add(c);
    out.headBlock = this.headBlock;
    out.ingest = this.ingest;
    out.disk = this.disk;
    out.ledger = this.ledger;
    return out;
  }

  /**
   * serve --threads: JSON-RPC calls answered per app thread (each thread's counts of every
   * instance), a family of its own so the sums above stay the process's: how evenly the kernel
   * spreads connections over the threads.
   */
  static renderThreadCalls(threads: readonly [thread: number, counts: readonly MetricsCounts[]][]): string {
    const lines = [...threads]
      .sort((a, b) => a[0] - b[0])
      .map(([thread, counts]) => {
        let n = 0;
        for (const c of counts) for (const [, x] of c.methods) for (const [, k] of x.calls) n += k;
        return `chainnode_thread_rpc_calls_total{thread="${thread}"} ${n}`;
      });
    return `${[...header('chainnode_thread_rpc_calls_total'), ...lines].join('\n')}\n`;
  }

  /** This instance alone, in the exposition format. */
  render(): string {
    return Metrics.renderAll([this]);
  }

  /** Several instances (one per network, plus the process's own) as one exposition: each family once. */
  static renderAll(all: readonly Metrics[]): string {
    const families = new Map<MetricName, string[]>();
    for (const m of all) m.collect(families);
    const out: string[] = [];
    for (const [family, lines] of families) out.push(...header(family), ...lines);
    return `${out.join('\n')}\n`;
  }

  /** Appends this instance's samples to `families` (family name -> sample lines). */
  private collect(families: Map<MetricName, string[]>): void {
    const add = (family: MetricName, line: string): void => {
      let lines = families.get(family);
      if (lines === undefined) families.set(family, (lines = []));
      lines.push(line);
    };
    for (const [f, meta] of Object.entries(METRIC_FAMILIES) as [MetricName, MetricFamily][])
      if (meta.written === 'always' && !families.has(f)) families.set(f, []);
    const n = this.network === undefined ? '' : `network="${esc(this.network)}",`;
    const only = this.network === undefined ? '' : `{network="${esc(this.network)}"}`;
    for (const [method, m] of this.methods) {
      for (const [outcome, c] of m.calls)
        add(
          'chainnode_rpc_calls_total',
          `chainnode_rpc_calls_total{${n}method="${esc(method)}",outcome="${outcome}"} ${c}`,
        );
    }
    for (const [method, { latency: h }] of this.methods) {
      if (h.count === 0) continue;
      const m = `${n}method="${esc(method)}"`;
      let cum = 0;
      for (let i = 0; i < BUCKETS.length; i++) {
        cum += h.counts[i] as number;
        add(
          'chainnode_rpc_call_duration_seconds',
          `chainnode_rpc_call_duration_seconds_bucket{${m},le="${BUCKETS[i]}"} ${cum}`,
        );
      }
      add(
        'chainnode_rpc_call_duration_seconds',
        `chainnode_rpc_call_duration_seconds_bucket{${m},le="+Inf"} ${h.count}`,
      );
      add('chainnode_rpc_call_duration_seconds', `chainnode_rpc_call_duration_seconds_sum{${m}} ${h.sum}`);
      add('chainnode_rpc_call_duration_seconds', `chainnode_rpc_call_duration_seconds_count{${m}} ${h.count}`);
    }
    for (const [method, m] of this.methods) {
      if (m.credits !== undefined)
        add(
          'chainnode_credits_charged_total',
          `chainnode_credits_charged_total{${n}method="${esc(method)}"} ${m.credits}`,
        );
    }
    for (const transport of ['http', 'ws'] as const) {
      for (const [status, c] of this.statuses[transport])
        add(
          'chainnode_responses_total',
          `chainnode_responses_total{${n}transport="${transport}",status="${status}"} ${c}`,
        );
    }
    // The process-wide instance of a multi-network server has no WebSockets or head of its own.
    if (this.network !== undefined || !this.routing) {
      add('chainnode_websocket_connections', `chainnode_websocket_connections${only} ${this.wsOpen}`);
      const subs = this.subscriptionsView();
      for (const kind of SUBSCRIPTION_KINDS)
        add('chainnode_subscriptions', `chainnode_subscriptions{${n}kind="${kind}"} ${subs[kind]}`);
    }
    // Reply budgets are the process's (one budget across networks): written by the unlabelled instance.
    if (this.network === undefined) {
      add('chainnode_reply_bytes_in_flight', `chainnode_reply_bytes_in_flight ${this.replyBytesInFlight}`);
      // Every reason from the start (0 until the first cut), so rate() and alerts see the series.
      for (const reason of CUT_REASONS)
        add(
          'chainnode_connections_cut_total',
          `chainnode_connections_cut_total{reason="${reason}"} ${this.cuts.get(reason) ?? 0}`,
        );
    }
    if (this.network !== undefined || !this.routing) {
      add('chainnode_head_block', `chainnode_head_block${only} ${this.headBlock}`);
      add('chainnode_logs_shed_total', `chainnode_logs_shed_total${only} ${this.offloadShed}`);
      add('chainnode_offloaded_calls_total', `chainnode_offloaded_calls_total${only} ${this.offloaded}`);
      const c = this.callCacheView();
      for (const [result, v] of [
        ['hit', c.hits],
        ['miss', c.misses],
      ] as const)
        add('chainnode_call_cache_lookups_total', `chainnode_call_cache_lookups_total{${n}result="${result}"} ${v}`);
      add('chainnode_call_cache_bytes', `chainnode_call_cache_bytes${only} ${c.bytes}`);
    }
    if (this.disk !== undefined) {
      add('chainnode_datadir_bytes', `chainnode_datadir_bytes${only} ${this.disk.datadirBytes}`);
      add(
        'chainnode_datadir_filesystem_free_bytes',
        `chainnode_datadir_filesystem_free_bytes${only} ${this.disk.freeBytes}`,
      );
    }
    if (this.ledger !== undefined && this.network === undefined) {
      add(
        'chainnode_ledger_degraded',
        `chainnode_ledger_degraded{failure="${this.ledger.failure}"} ${this.ledger.degraded ? 1 : 0}`,
      );
      add('chainnode_ledger_journal_charges', `chainnode_ledger_journal_charges ${this.ledger.journalCharges}`);
    }
    const f = this.ingest?.();
    if (f !== undefined) {
      const gauge = (name: MetricName, v: number | bigint): void => add(name, `${name}${only} ${v}`);
      gauge('chainnode_follow_upstream_head_block', f.upstreamHead ?? -1);
      gauge('chainnode_follow_local_head_block', f.localHead);
      gauge('chainnode_follow_lag_blocks', f.lagBlocks);
      gauge('chainnode_follow_lag_seconds', f.lagSeconds);
      gauge('chainnode_follow_reorgs', f.reorgs);
      gauge('chainnode_follow_blocks_imported', f.blocksImported);
      gauge('chainnode_follow_failed', f.state === 'failed' ? 1 : 0);
      gauge('chainnode_follow_upstream_up', f.state === 'retrying' || f.state === 'starting' ? 0 : 1);
      gauge(
        'chainnode_follow_last_error_timestamp_seconds',
        f.lastErrorAt === undefined ? 0 : Math.floor(f.lastErrorAt / 1000),
      );
      gauge('chainnode_follow_first_block', f.firstBlock);
      const d = f.stateDownload;
      if (d !== undefined) {
        if (d.nodes !== undefined) gauge('chainnode_join_state_nodes', d.nodes);
        gauge('chainnode_join_state_whole', d.whole ? 1 : 0);
      }
      const p = f.provenState;
      if (p !== undefined) {
        gauge('chainnode_proven_state_fetches_total', p.fetches);
        gauge('chainnode_proven_state_rejected_total', p.rejected);
        gauge('chainnode_proven_state_failed_total', p.failed);
      }
      const h = f.historyUpstream;
      if (h !== undefined) {
        gauge('chainnode_history_upstream_fetches_total', h.fetches);
        gauge('chainnode_history_upstream_rejected_total', h.rejected);
        gauge('chainnode_history_upstream_failed_total', h.failed);
      }
    }
  }
}
