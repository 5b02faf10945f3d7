// What the varied bench's runner (varied-run.ts) needs from a chain: request mixes, an
// independent check of every reply, and a normalised form of each reply for comparing the two
// servers with each other. The fixture and mainnet-shaped chains (varied-fixtures.ts), the scaled
// chain (varied-scaled.ts) and the read chain (read-chain.ts) implement it, each behind a
// ChainBuilder; the log chain (getlogs-run.ts) is a ChainBuilder of its own facts.

export type Kind =
  | 'blockHashes'
  | 'blockFull'
  | 'tx'
  | 'storage'
  | 'account'
  | 'proof'
  | 'logs'
  | 'call'
  | 'receipt'
  | 'blockReceipts'
  | 'trace';
export type ServerName = 'chainnode' | 'anvil';

export interface Call {
  kind: Kind;
  method: string;
  params: unknown[];
  /** The body, with its own id. */
  body: string;
  /** For storage/proof: the tuple index shared by the two mixes. */
  tuple?: number;
}

export interface Mix {
  label: string;
  calls: Call[];
}

export interface Reply {
  result?: unknown;
  error?: { code: number; message: string };
}

export interface ChainUnderTest {
  /** One line for the report header: what the chain is and how big. */
  describe: string;
  mixes: Mix[];
  datadir: string;
  /** anvil's JSON-RPC URL (undefined: --no-anvil). */
  anvilUrl: string | undefined;
  /** anvil's process group (its CPU is measured per request). */
  anvilPgid?: number;
  /**
   * Throws unless `r` is the right answer to `c`, computed independently of both servers.
   * Returns 'unsupported' for an answer the server may legitimately refuse (anvil without the
   * state of an old block), which takes the body out of that server's load.
   */
  check(c: Call, r: Reply, server: ServerName): Promise<'ok' | 'unsupported'>;
  /**
   * The part of a checked reply both servers must agree on, as a string (undefined: not
   * compared), with the deviations of anvil from geth normalised away.
   */
  normalise(c: Call, r: Reply, server: ServerName): string | undefined;
  /**
   * Bodies anvil is not asked at all, with the reason (undefined: ask it): the state of blocks
   * before its kept window, which it refuses, and eth_getProof beyond a sample (anvil rebuilds
   * the state trie per call: hundreds of ms each on the scaled chain).
   */
  anvilSkips?(calls: Call[]): Set<string>;
  /** Stops what the chain started (anvil). */
  close(): Promise<void>;
}

/**
 * One way of building a chain for a bench: `build` makes (or reuses) the chain in `dir` from its
 * own `options` and logs its progress to `log`. A bench picks its chain from a table of these
 * (varied-run.ts).
 */
export interface ChainBuilder<O, C = ChainUnderTest> {
  /** The chain's name (what --chain says). */
  name: string;
  build(options: O, dir: string, log: (line: string) => void): Promise<C>;
}

/** `b` built from options drawn from a bench's own (`pick`). */
export function builderFrom<B, O, C>(b: ChainBuilder<O, C>, pick: (o: B) => O): ChainBuilder<B, C> {
  return { name: b.name, build: (o, dir, log) => b.build(pick(o), dir, log) };
}

export function callMaker(): (kind: Kind, method: string, params: unknown[], tuple?: number) => Call {
  let id = 1;
  return (kind, method, params, tuple) => {
    const c: Call = { kind, method, params, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) };
    if (tuple !== undefined) c.tuple = tuple;
    return c;
  };
}

export const qty = (n: number | bigint): string => `0x${n.toString(16)}`;

/**
 * What anvil started with `--prune-history` is not sent (ChainUnderTest.anvilSkips): state
 * calls (storage, account, proof; the block is their third parameter) before `oldest`, and
 * proofs and account proofs beyond `proofSample` per mix (anvil rebuilds the trie per call).
 */
export function anvilWindowSkips(calls: Call[], oldest: number, proofSample: number): Set<string> {
  const skip = new Set<string>();
  let proofs = 0;
  for (const c of calls) {
    if (c.kind !== 'storage' && c.kind !== 'account' && c.kind !== 'proof') continue;
    if (Number(c.params[2]) < oldest) skip.add(c.body);
    else if (c.kind !== 'storage' && ++proofs > proofSample) skip.add(c.body);
  }
  return skip;
}

/** A mixed workload: `n` calls drawn from `pools` with `weights` (summing to 1). */
export function mixOf(pools: Call[][], weights: number[], n: number, next: () => number): Call[] {
  const out: Call[] = [];
  for (let i = 0; i < n; i++) {
    let r = next();
    let k = 0;
    while (k < weights.length - 1 && r >= (weights[k] as number)) r -= weights[k++] as number;
    const pool = pools[k] as Call[];
    out.push(pool[Math.floor(next() * pool.length)] as Call);
  }
  return out;
}

/** Shuffles in place (Fisher-Yates). */
export function shuffle<T>(a: T[], next: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}
