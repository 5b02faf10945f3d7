// A store seen without the rows an executing import recorded for traces (TxFrames, TxStateDiffs,
// FrameBlooms, FrameAddresses): what the tests, the trace benches and the trace verifier compare the recorded
// answers against.

/**
 * `store` without its recorded trace rows. `rows: 'none'`: a store that cannot hold them (the
 * methods absent), so every trace re-executes; `'missing'`: a replica's store, which holds none
 * of its blocks' rows (the methods answer undefined), so a block's traces record it first by
 * re-executing it.
 */
export function withoutRecordedRows<S extends object>(store: S, rows: 'none' | 'missing' = 'none'): S {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'frameBlooms' || prop === 'frameIndexedBlocks') return undefined;
      if (prop === 'txFrames' || prop === 'txStateDiffs') return rows === 'none' ? undefined : async () => undefined;
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
