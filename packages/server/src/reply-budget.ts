// Reply bytes in flight: what has been handed to the transport (uWS) and not yet taken by the
// kernel, per connection and for the whole process. The server reports each connection's
// buffered amount after every send and on every drain; this keeps the sum, tells the server
// when the process is over its budget (then no new request starts until bytes drain), and
// finds the connections to cut: those that made no progress reading for too long, and, while
// the process is over budget, the largest holders among those not reading at the moment.

interface Holding {
  bytes: number;
  /** Date.now() when the buffered amount last went down (or first went up from 0). */
  progressAt: number;
}

export class ReplyBudget<C> {
  private total = 0;
  private readonly holdings = new Map<C, Holding>();
  private readonly waiting = new Set<() => void>();

  constructor(
    /** Process-wide budget of buffered reply bytes. */
    readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Buffered reply bytes of every connection together. */
  get bytes(): number {
    return this.total;
  }

  get over(): boolean {
    return this.total > this.limit;
  }

  /** Records that `conn` has `buffered` reply bytes waiting in the transport now. */
  update(conn: C, buffered: number): void {
    const h = this.holdings.get(conn);
    const before = h?.bytes ?? 0;
    this.total += buffered - before;
    if (buffered <= 0) this.holdings.delete(conn);
    else if (h === undefined) this.holdings.set(conn, { bytes: buffered, progressAt: this.now() });
    else {
      if (buffered < before) h.progressAt = this.now();
      h.bytes = buffered;
    }
    if (buffered < before && !this.over && this.waiting.size > 0) {
      const resume = [...this.waiting];
      this.waiting.clear();
      for (const f of resume) f();
    }
  }

  /** The connection is gone: its bytes no longer count. */
  release(conn: C): void {
    this.update(conn, 0);
  }

  /** Calls `resume` once, the next time bytes drain while the process is under budget. */
  whenUnder(resume: () => void): void {
    this.waiting.add(resume);
  }

  forget(resume: () => void): void {
    this.waiting.delete(resume);
  }

  /** Connections holding bytes now. */
  holders(): C[] {
    return [...this.holdings.keys()];
  }

  /** Connections holding bytes whose buffered amount has not gone down for `ms`. */
  stalled(ms: number): C[] {
    const cutoff = this.now() - ms;
    return [...this.holdings].filter(([, h]) => h.progressAt <= cutoff).map(([c]) => c);
  }

  /** Connections that made no progress reading for `ms`, largest holding first. */
  stalledLargestFirst(ms: number): C[] {
    const cutoff = this.now() - ms;
    return [...this.holdings]
      .filter(([, h]) => h.progressAt <= cutoff)
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .map(([c]) => c);
  }
}
