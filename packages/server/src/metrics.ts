// Prometheus text exposition (format 0.0.4) for the few series we keep: requests by method
// and outcome, latency histograms per method, credits charged per method, HTTP responses by
// status, open WebSockets, and the head block. No key (or key hash) ever appears in a label.
// Each network of the process keeps its own Metrics (label `network="<name>"`); responses that
// reach no network (unknown network, preflight, process health) go to an unlabelled one, and
// Metrics.renderAll writes every family once with all their series.

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What /health and the metrics show of a follower's ingest (ingest's FollowStatus fits it). */
export interface IngestStatusView {
  state: string;
  /** Origin of the upstream (no path: it may hold a key). */
  upstream: string;
  upstreamHead: bigint | undefined;
  localHead: bigint;
  lagBlocks: bigint;
  lagSeconds: number;
  reorgs: number;
  blocksImported: number;
  lastError: string | undefined;
  lastErrorAt: number | undefined;
}

export type Outcome = 'ok' | 'error' | 'no_credits' | 'unauthorized' | 'failover';

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
  replyBytesInFlight: number;
  cuts: [string, number][];
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
  readonly cuts = new Map<string, number>();
  headBlock = -1;
  /** A follower's ingest state (serve --follow). */
  ingest: (() => IngestStatusView) | undefined;

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
      replyBytesInFlight: this.replyBytesInFlight,
      cuts: [...this.cuts],
    };
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
    this.replyBytesInFlight += c.replyBytesInFlight;
    for (const [reason, n] of c.cuts) addTo(this.cuts, reason, n);
  }

  /** A copy of this instance with `others` added (its gauges of the head and a follower are this one's). */
  sum(others: readonly MetricsCounts[]): Metrics {
    const out = new Metrics(this.network, this.routing);
    out.add(this.counts());
    for (const c of others) out.add(c);
    out.headBlock = this.headBlock;
    out.ingest = this.ingest;
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
    return `# HELP chainnode_thread_rpc_calls_total JSON-RPC calls by app thread (serve --threads).\n# TYPE chainnode_thread_rpc_calls_total counter\n${lines.join('\n')}\n`;
  }

  /** This instance alone, in the exposition format. */
  render(): string {
    return Metrics.renderAll([this]);
  }

  /** Several instances (one per network, plus the process's own) as one exposition: each family once. */
  static renderAll(all: readonly Metrics[]): string {
    const families = new Map<string, string[]>();
    for (const m of all) m.collect(families);
    const out: string[] = [];
    for (const [family, lines] of families) {
      const meta = FAMILIES[family as keyof typeof FAMILIES] ?? FOLLOW_GAUGES[family as keyof typeof FOLLOW_GAUGES];
      out.push(`# HELP ${family} ${meta.help}`, `# TYPE ${family} ${meta.type}`, ...lines);
    }
    return `${out.join('\n')}\n`;
  }

  /** Appends this instance's samples to `families` (family name -> sample lines). */
  private collect(families: Map<string, string[]>): void {
    const add = (family: keyof typeof FAMILIES | keyof typeof FOLLOW_GAUGES, line: string): void => {
      let lines = families.get(family);
      if (lines === undefined) families.set(family, (lines = []));
      lines.push(line);
    };
    for (const f of Object.keys(FAMILIES)) if (!families.has(f)) families.set(f, []);
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
    }
    // Reply budgets are the process's (one budget across networks): written by the unlabelled instance.
    if (this.network === undefined) {
      add('chainnode_reply_bytes_in_flight', `chainnode_reply_bytes_in_flight ${this.replyBytesInFlight}`);
      for (const [reason, c] of this.cuts)
        add('chainnode_connections_cut_total', `chainnode_connections_cut_total{reason="${reason}"} ${c}`);
    }
    if (this.network !== undefined || !this.routing) {
      add('chainnode_head_block', `chainnode_head_block${only} ${this.headBlock}`);
    }
    const f = this.ingest?.();
    if (f !== undefined) {
      const gauge = (name: keyof typeof FOLLOW_GAUGES, v: number | bigint): void => add(name, `${name}${only} ${v}`);
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
    }
  }
}

const FAMILIES = {
  chainnode_rpc_calls_total: { help: 'JSON-RPC calls by method and outcome.', type: 'counter' },
  chainnode_rpc_call_duration_seconds: { help: 'Time from dispatch to answer per call.', type: 'histogram' },
  chainnode_credits_charged_total: { help: 'Credits charged, by method.', type: 'counter' },
  chainnode_responses_total: {
    help: 'Transport responses by status (WebSocket: 101 per accepted upgrade).',
    type: 'counter',
  },
  chainnode_websocket_connections: { help: 'Open WebSocket connections.', type: 'gauge' },
  chainnode_reply_bytes_in_flight: { help: 'Reply bytes buffered towards clients (all connections).', type: 'gauge' },
  chainnode_connections_cut_total: {
    help: 'Connections closed by the reply budgets and timeouts, by reason.',
    type: 'counter',
  },
  chainnode_head_block: {
    help: 'Number of the newest imported block (-1 when the store is unavailable).',
    type: 'gauge',
  },
} as const;

/** A follower's gauges (serve --follow), written only by a network that follows an upstream. */
const FOLLOW_GAUGES = {
  chainnode_follow_upstream_head_block: {
    help: 'Head block number the upstream last reported (-1 before its first answer).',
    type: 'gauge',
  },
  chainnode_follow_local_head_block: { help: 'Newest block the follower has verified and committed.', type: 'gauge' },
  chainnode_follow_lag_blocks: { help: 'Upstream head minus local head.', type: 'gauge' },
  chainnode_follow_lag_seconds: { help: "Upstream head's timestamp minus local head's timestamp.", type: 'gauge' },
  chainnode_follow_reorgs: { help: 'Reorgs (and rollbacks) applied since start.', type: 'gauge' },
  chainnode_follow_blocks_imported: { help: 'Blocks committed since start.', type: 'gauge' },
  chainnode_follow_failed: {
    help: '1 when a verification failure (or a too-deep reorg) stopped the ingest; serving continues on the verified prefix.',
    type: 'gauge',
  },
  chainnode_follow_upstream_up: { help: '0 while the upstream is failing and being retried.', type: 'gauge' },
  chainnode_follow_last_error_timestamp_seconds: {
    help: 'Unix time of the last upstream or ingest error (0: none).',
    type: 'gauge',
  },
} as const;
