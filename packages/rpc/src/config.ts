// RpcConfig: the service's settings, their defaults (documented in the README) and checks.

export interface RpcConfig {
  /** `safe` resolves to head - safeDepth (no consensus client here). Default 0. */
  safeDepth: number;
  /** `finalized` resolves to head - finalizedDepth. Default 0. */
  finalizedDepth: number;
  /** Maximum calls in one JSON array batch; larger batches get -32600. */
  maxBatchSize: number;
  /**
   * Largest answer of one batch, in characters of JSON (geth's BatchResponseMaxSize, same
   * default): once the answers so far pass it, the remaining calls are not run and each gets
   * -32003 "response too large". Bounds the memory one batch can take.
   */
  maxBatchResponseBytes: number;
  /**
   * Batches answered at once; more wait their turn in arrival order. Batches that need the
   * same records then finish one after another instead of all together at the end (first
   * answer early), and at most this many batch answers are being built at any time.
   */
  maxConcurrentBatches: number;
  logs: {
    maxResults: number; // 10,000
    timeoutMs: number; // 10,000
    maxFilterParams: number; // 5,000 (addresses + topic values)
  };
  /** web3_clientVersion answer. */
  clientVersion: string;
  /**
   * Most gas one eth_call / eth_estimateGas / eth_createAccessList may use (geth's RPCGasCap,
   * 50,000,000); a larger or missing `gas` is capped to it.
   */
  callGasCap: number;
  /** Most wall time one of those calls may take, in ms (geth's RPCEVMTimeout, 5,000). */
  callTimeoutMs: number;
  /**
   * Bytes of answers of eth_call, eth_estimateGas and eth_createAccessList kept by block hash
   * and params (call-cache.ts), per service (each app thread's network has its own); 0: none kept.
   */
  callCacheBytes: number;
  /** Most blocks one eth_simulateV1 may simulate, gaps included (geth's 256). */
  simulateMaxBlocks: number;
  /** Most calls one eth_simulateV1 may carry over all its blocks (geth's 10,000). */
  simulateMaxCalls: number;
  /**
   * Largest answer of one debug_trace* call, in bytes of JSON (struct logs grow by hundreds of
   * bytes per opcode): past it the trace stops with -32003 "response too large".
   */
  traceMaxBytes: number;
  /**
   * Most blocks one trace_filter may cover (fromBlock to toBlock, both counted): each block of
   * the range is re-executed; more get -32602 "Block range too large".
   */
  traceFilterMaxBlocks: number;
}

/**
 * - safe/finalized: there is no consensus client, so both resolve to the head by default
 *   (depth 0); `pending` always resolves to `latest`.
 * - maxBatchSize 1000: geth's default BatchRequestLimit. A larger batch is answered with a
 *   single -32600 "batch too large" (inside a one-element array, as geth does).
 * - logs: spec 8.2 — at most 10,000 results, 10 s, 5,000 filter parameters.
 */
/**
 * Extra wait past a call's deadline for a store (or an offload worker) that does not stop on time,
 * before the caller gets "query timeout exceeded" anyway.
 */
export const DEADLINE_GRACE_MS = 250;

/**
 * Offloadable calls whose estimated cost (MethodDef.estimateCost) is at most this run inline:
 * for eth_getLogs, one address over up to 100 blocks, or any filter over up to 10 blocks
 * (a block hash query counts as one block). Such a call reads a few index chunks and at most a
 * few thousand logs, less work than the round trip to a worker.
 */
export const INLINE_COST_LIMIT = 100;

/**
 * An offloadable call estimated above INLINE_COST_LIMIT whose method can be interrupted
 * (MethodDef.interruptible: eth_call, eth_estimateGas, eth_createAccessList, estimated by the gas
 * they may burn, the cap when a call names none) first runs inline for up to this much work (an
 * opcode 1, a state read 100: exec's InlineBudget; eth_estimateGas's runs share it; about 2-5 ms
 * of one call's CPU here), then runs again from the start on the offload executor: most calls
 * that may burn 50M gas burn a few thousand (a token balanceOf: ~300 opcodes, 4 reads) and finish
 * well within it. Work, not time: calls interleaved on one event loop do not spend each other's.
 */
export const INLINE_TRY_WORK = 20_000;

export const DEFAULT_RPC_CONFIG: RpcConfig = {
  safeDepth: 0,
  finalizedDepth: 0,
  maxBatchSize: 1000,
  maxBatchResponseBytes: 25_000_000,
  maxConcurrentBatches: 2,
  logs: {
    maxResults: 10_000,
    timeoutMs: 10_000,
    maxFilterParams: 5_000,
  },
  clientVersion: defaultClientVersion(),
  callGasCap: 50_000_000,
  callTimeoutMs: 5_000,
  callCacheBytes: 32 * 2 ** 20,
  simulateMaxBlocks: 256,
  simulateMaxCalls: 10_000,
  traceMaxBytes: 25_000_000,
  traceFilterMaxBlocks: 1_000,
};

/** Like geth's "Geth/v1.16.0-stable/linux-amd64/go1.24": name/version/os-arch/runtime. */
export function defaultClientVersion(): string {
  const major = process.versions.node.split('.')[0] ?? '0';
  return `chainnode/v0.1.0/${process.platform}-${process.arch}/nodejs${major}`;
}

export function resolveConfig(partial: Partial<RpcConfig> | undefined): RpcConfig {
  const c: RpcConfig = {
    ...DEFAULT_RPC_CONFIG,
    ...partial,
    logs: { ...DEFAULT_RPC_CONFIG.logs, ...partial?.logs },
  };
  for (const [name, v] of [
    ['safeDepth', c.safeDepth],
    ['finalizedDepth', c.finalizedDepth],
    ['callCacheBytes', c.callCacheBytes],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`RpcConfig.${name} must be a non-negative integer`);
  }
  for (const [name, v] of [
    ['maxBatchSize', c.maxBatchSize],
    ['maxBatchResponseBytes', c.maxBatchResponseBytes],
    ['maxConcurrentBatches', c.maxConcurrentBatches],
    ['logs.maxResults', c.logs.maxResults],
    ['logs.timeoutMs', c.logs.timeoutMs],
    ['logs.maxFilterParams', c.logs.maxFilterParams],
    ['callGasCap', c.callGasCap],
    ['callTimeoutMs', c.callTimeoutMs],
    ['simulateMaxBlocks', c.simulateMaxBlocks],
    ['simulateMaxCalls', c.simulateMaxCalls],
    ['traceMaxBytes', c.traceMaxBytes],
    ['traceFilterMaxBlocks', c.traceFilterMaxBlocks],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`RpcConfig.${name} must be a positive integer`);
  }
  return c;
}
