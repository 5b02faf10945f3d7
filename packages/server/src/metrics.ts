// Prometheus text exposition (format 0.0.4) for the few series we keep: requests by method
// and outcome, latency histograms per method, credits charged per method, HTTP responses by
// status, open WebSockets, and the head block. No key (or key hash) ever appears in a label.

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

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

export class Metrics {
  private requests = new Map<string, number>(); // "method\0outcome" -> n
  private latency = new Map<string, Histogram>();
  private credits = new Map<string, number>();
  private httpStatus = new Map<string, number>(); // "transport\0status" -> n
  wsOpen = 0;
  headBlock = -1;

  call(method: string, outcome: Outcome, seconds: number): void {
    const k = `${method}\0${outcome}`;
    this.requests.set(k, (this.requests.get(k) ?? 0) + 1);
    let h = this.latency.get(method);
    if (!h) this.latency.set(method, (h = new Histogram()));
    h.observe(seconds);
  }

  charged(method: string, credits: number): void {
    this.credits.set(method, (this.credits.get(method) ?? 0) + credits);
  }

  response(transport: 'http' | 'ws', status: number): void {
    const k = `${transport}\0${status}`;
    this.httpStatus.set(k, (this.httpStatus.get(k) ?? 0) + 1);
  }

  render(): string {
    const out: string[] = [];
    out.push('# HELP chainnode_rpc_calls_total JSON-RPC calls by method and outcome.');
    out.push('# TYPE chainnode_rpc_calls_total counter');
    for (const [k, n] of this.requests) {
      const [method, outcome] = k.split('\0') as [string, string];
      out.push(`chainnode_rpc_calls_total{method="${esc(method)}",outcome="${outcome}"} ${n}`);
    }
    out.push('# HELP chainnode_rpc_call_duration_seconds Time from dispatch to answer per call.');
    out.push('# TYPE chainnode_rpc_call_duration_seconds histogram');
    for (const [method, h] of this.latency) {
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
    for (const [method, n] of this.credits) out.push(`chainnode_credits_charged_total{method="${esc(method)}"} ${n}`);
    out.push('# HELP chainnode_responses_total Transport responses by status (WebSocket: 101 per accepted upgrade).');
    out.push('# TYPE chainnode_responses_total counter');
    for (const [k, n] of this.httpStatus) {
      const [transport, status] = k.split('\0') as [string, string];
      out.push(`chainnode_responses_total{transport="${transport}",status="${status}"} ${n}`);
    }
    out.push('# HELP chainnode_websocket_connections Open WebSocket connections.');
    out.push('# TYPE chainnode_websocket_connections gauge');
    out.push(`chainnode_websocket_connections ${this.wsOpen}`);
    out.push('# HELP chainnode_head_block Number of the newest imported block (-1 when the store is unavailable).');
    out.push('# TYPE chainnode_head_block gauge');
    out.push(`chainnode_head_block ${this.headBlock}`);
    return `${out.join('\n')}\n`;
  }
}
