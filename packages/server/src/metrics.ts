// Prometheus text exposition (format 0.0.4) for the few series we keep: requests by method
// and outcome, latency histograms per method, credits charged per method, HTTP responses by
// status, open WebSockets, and the head block. No key (or key hash) ever appears in a label.

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
  headBlock = -1;
  /** A follower's ingest state (serve --follow). */
  ingest: (() => IngestStatusView) | undefined;

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

  render(): string {
    const out: string[] = [];
    out.push('# HELP chainnode_rpc_calls_total JSON-RPC calls by method and outcome.');
    out.push('# TYPE chainnode_rpc_calls_total counter');
    for (const [method, m] of this.methods) {
      for (const [outcome, n] of m.calls) out.push(`chainnode_rpc_calls_total{method="${esc(method)}",outcome="${outcome}"} ${n}`);
    }
    out.push('# HELP chainnode_rpc_call_duration_seconds Time from dispatch to answer per call.');
    out.push('# TYPE chainnode_rpc_call_duration_seconds histogram');
    for (const [method, { latency: h }] of this.methods) {
      if (h.count === 0) continue;
      const m = esc(method);
      let cum = 0;
      for (let i = 0; i < BUCKETS.length; i++) {
        cum += h.counts[i] as number;
        out.push(`chainnode_rpc_call_duration_seconds_bucket{method="${m}",le="${BUCKETS[i]}"} ${cum}`);
      }
      out.push(`chainnode_rpc_call_duration_seconds_bucket{method="${m}",le="+Inf"} ${h.count}`);
      out.push(`chainnode_rpc_call_duration_seconds_sum{method="${m}"} ${h.sum}`);
      out.push(`chainnode_rpc_call_duration_seconds_count{method="${m}"} ${h.count}`);
    }
    out.push('# HELP chainnode_credits_charged_total Credits charged, by method.');
    out.push('# TYPE chainnode_credits_charged_total counter');
    for (const [method, m] of this.methods) {
      if (m.credits !== undefined) out.push(`chainnode_credits_charged_total{method="${esc(method)}"} ${m.credits}`);
    }
    out.push('# HELP chainnode_responses_total Transport responses by status (WebSocket: 101 per accepted upgrade).');
    out.push('# TYPE chainnode_responses_total counter');
    for (const transport of ['http', 'ws'] as const) {
      for (const [status, n] of this.statuses[transport]) out.push(`chainnode_responses_total{transport="${transport}",status="${status}"} ${n}`);
    }
    out.push('# HELP chainnode_websocket_connections Open WebSocket connections.');
    out.push('# TYPE chainnode_websocket_connections gauge');
    out.push(`chainnode_websocket_connections ${this.wsOpen}`);
    out.push('# HELP chainnode_head_block Number of the newest imported block (-1 when the store is unavailable).');
    out.push('# TYPE chainnode_head_block gauge');
    out.push(`chainnode_head_block ${this.headBlock}`);
    const f = this.ingest?.();
    if (f !== undefined) {
      const gauge = (name: string, help: string, v: number | bigint) => {
        out.push(`# HELP chainnode_follow_${name} ${help}`);
        out.push(`# TYPE chainnode_follow_${name} gauge`);
        out.push(`chainnode_follow_${name} ${v}`);
      };
      gauge('upstream_head_block', 'Head block number the upstream last reported (-1 before its first answer).', f.upstreamHead ?? -1);
      gauge('local_head_block', 'Newest block the follower has verified and committed.', f.localHead);
      gauge('lag_blocks', 'Upstream head minus local head.', f.lagBlocks);
      gauge('lag_seconds', "Upstream head's timestamp minus local head's timestamp.", f.lagSeconds);
      gauge('reorgs', 'Reorgs (and rollbacks) applied since start.', f.reorgs);
      gauge('blocks_imported', 'Blocks committed since start.', f.blocksImported);
      gauge('failed', '1 when a verification failure (or a too-deep reorg) stopped the ingest; serving continues on the verified prefix.', f.state === 'failed' ? 1 : 0);
      gauge('upstream_up', '0 while the upstream is failing and being retried.', f.state === 'retrying' || f.state === 'starting' ? 0 : 1);
      gauge('last_error_timestamp_seconds', 'Unix time of the last upstream or ingest error (0: none).', f.lastErrorAt === undefined ? 0 : Math.floor(f.lastErrorAt / 1000));
    }
    return `${out.join('\n')}\n`;
  }
}
