// Single-flight: concurrent requests for the same missing record share ONE load. The first
// caller for a key starts the load; every caller that asks for that key before it settles gets
// the same promise (so the same record object, and whatever is memoised per object downstream,
// e.g. a reply's formatted JSON). The key is forgotten when the load settles, success or
// failure: a failed load is not cached, the next request tries again. Holds one entry per load
// in progress, so it is bounded by the requests in flight.

export class SingleFlight<K, V> {
  private readonly loads = new Map<K, Promise<V>>();

  /** The load in progress for `key`, or a new one started with `load`. */
  run(key: K, load: () => Promise<V>): Promise<V> {
    const pending = this.loads.get(key);
    if (pending !== undefined) return pending;
    const started = load();
    this.loads.set(key, started);
    const forget = (): void => {
      if (this.loads.get(key) === started) this.loads.delete(key);
    };
    started.then(forget, forget);
    return started;
  }

  /**
   * Forget every load in progress (a commit moved the head): callers from now on start a fresh
   * load instead of sharing one that may read the chain as it was before the commit.
   */
  clear(): void {
    this.loads.clear();
  }

  /** Loads in progress. */
  get size(): number {
    return this.loads.size;
  }
}
