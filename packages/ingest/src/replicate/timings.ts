// Where replication's time goes, for the benchmark and the sync summary: waiting for the upstream,
// decoding its answers, recomputing the header's roots, applying the state changes (trie updates
// and hashing), and writing batches. Wall-clock milliseconds; the phases do not overlap except
// fetching, which runs ahead of the rest (its figure is the time the pipeline waited for it).
export class ReplicationTimings {
  blocks = 0;
  gas = 0n;
  fetchWaitMs = 0;
  decodeMs = 0;
  rootsMs = 0;
  stateMs = 0;
  writeMs = 0;

  /** Runs `fn`, adding its duration to `phase`. */
  async time<T>(
    phase: 'fetchWaitMs' | 'decodeMs' | 'rootsMs' | 'stateMs' | 'writeMs',
    fn: () => Promise<T>,
  ): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this[phase] += performance.now() - t0;
    }
  }

  /** The same for synchronous work. */
  timeSync<T>(phase: 'decodeMs', fn: () => T): T {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      this[phase] += performance.now() - t0;
    }
  }
}
