// A joined datadir's first-block state, downloaded whole (`--join-state download`): every trie node
// of block N's state (the account trie and each account's storage trie) and every contract's code,
// from a chainnode primary (chainnode_getStateNodes), walking down from N's state root, which the
// datadir holds verified by its hash links. Each node is taken only if its keccak is the hash its
// parent names (the root: N's header's), each code only if its keccak is the code hash its account
// names: content-addressed, so a lying primary can withhold state but never change it. Once the
// walk ends, every node any read of N's state reaches is local, and the blocks after N replicate
// with state (each block's state root checked), so every read from N on is a local walk.
//
// Resumable: nodes are written as they arrive (batches of rows, durable before the next), and the
// datadir says `pending` until the walk has ended. A resumed walk starts again at the root and reads
// what is already stored instead of asking for it (a node written before a crash may lack its
// children, so it is walked again, not skipped).
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, KECCAK256_RLP, bytesToHex, equalsBytes } from '@ethereumjs/util';
import { UpstreamError, wireBytes } from '@chainnode/core';
import type { UpstreamClient } from '@chainnode/core';
import { keccak256 } from '@chainnode/store';
import { BlockVerificationError, ChainSourceError } from '../errors.js';

/** Where the downloaded state goes: a joined datadir's writer. */
export interface StateSink {
  /** A stored trie node by hash (whole), or undefined. */
  node(hash: Uint8Array): Uint8Array | undefined;
  /** Whether the code of this hash is stored. */
  hasCode(hash: Uint8Array): boolean;
  /** Writes verified rows; durable when it settles. */
  write(
    nodes: { hash: Uint8Array; bytes: Uint8Array }[],
    codes: { hash: Uint8Array; bytes: Uint8Array }[],
  ): Promise<void>;
}

export interface StateDownloadOptions {
  client: UpstreamClient;
  /** The block whose state is downloaded (its number names it in errors and progress). */
  block: bigint;
  stateRoot: Uint8Array;
  sink: StateSink;
  /** Node hashes a request asks for (at most chainnode_getStateNodes' 1,024; default 512). */
  batchNodes?: number;
  /** Requests in flight at once (default 4). */
  inFlight?: number;
  /** Rows gathered before a write (default 4,096). */
  writeRows?: number;
  /** Progress, every `progressMs` (default 5 s) and at the end. */
  log?: (line: string) => void;
  progressMs?: number;
  /** Called after each request's rows are taken (the follow status shows them). */
  onProgress?: (stats: StateDownloadStats) => void;
  signal?: AbortSignal;
}

export interface StateDownloadStats {
  /** Nodes fetched (verified and written) and read from the datadir (a resumed walk). */
  fetched: number;
  local: number;
  /** Codes held: fetched (checked by hash) or found stored. */
  codes: number;
  /** Accounts and storage slots (leaves) walked. */
  accounts: number;
  slots: number;
  bytes: number;
  requests: number;
  /** False when the signal stopped the walk before its end. */
  complete: boolean;
}

type Nested = Uint8Array | Nested[];
type Kind = 0 | 1; // 0: the account trie, 1: a storage trie

const ACCOUNT: Kind = 0;
const STORAGE: Kind = 1;

/** Stored nodes a resumed walk reads before it yields (checks the signal, reports progress). */
const LOCAL_PER_TURN = 4096;

/** chainnode_getStateNodes' largest request (methods/chainnode_getStateNodes.ts). */
const MAX_NODES = 1024;
const MAX_CODES = 64;

interface Work {
  hash: Uint8Array;
  kind: Kind;
}

/** An upstream without chainnode_getStateNodes: what to do instead; any other error as it is. */
function notServed(err: unknown, origin: string): unknown {
  if (err instanceof UpstreamError && /method not found|not supported|-32601/i.test(err.message))
    return new ChainSourceError(
      `--join-state download needs a chainnode primary (chainnode_getStateNodes): ${origin} does not serve it; join with --join-state proofs`,
    );
  return err;
}

/**
 * Whether `client` serves trie nodes by hash (an empty chainnode_getStateNodes), asked before a
 * datadir is created to download from it: one that does not is refused with what to do instead.
 */
export async function probeStateNodes(client: UpstreamClient): Promise<void> {
  const reply = await client.call('chainnode_getStateNodes', [[], []]).catch((err: unknown) => {
    throw notServed(err, client.origin);
  });
  const r = reply as { nodes?: unknown } | null;
  if (r === null || typeof r !== 'object' || !Array.isArray(r.nodes))
    throw new ChainSourceError(
      `--join-state download needs a chainnode primary (chainnode_getStateNodes): ${client.origin} answers it with something else; join with --join-state proofs`,
    );
}

/** Downloads the state of `stateRoot` into the sink (see the file comment). */
export async function downloadState(o: StateDownloadOptions): Promise<StateDownloadStats> {
  const stats: StateDownloadStats = {
    fetched: 0,
    local: 0,
    codes: 0,
    accounts: 0,
    slots: 0,
    bytes: 0,
    requests: 0,
    complete: false,
  };
  const batchNodes = Math.min(MAX_NODES, Math.max(1, o.batchNodes ?? 512));
  const inFlight = Math.max(1, o.inFlight ?? 4);
  const writeRows = o.writeRows ?? 4096;
  const origin = o.client.origin;
  const stack: Work[] = [];
  const codes: Uint8Array[] = [];
  // Storage tries and code shared by many accounts (the same contract deployed again) are walked once.
  const seenStorage = new Set<string>();
  const seenCode = new Set<string>();
  const pendingNodes: { hash: Uint8Array; bytes: Uint8Array }[] = [];
  const pendingCodes: { hash: Uint8Array; bytes: Uint8Array }[] = [];
  let writing: Promise<void> = Promise.resolve();

  const refusal = (what: string, expected: string, computed: string): Error =>
    new BlockVerificationError(o.block, `state ${what}`, expected, computed, 'upstream');

  const child = (c: Nested, kind: Kind): void => {
    if (Array.isArray(c)) {
      visit(c, kind); // an embedded node (under 32 bytes): its own children follow
      return;
    }
    if (c.length === 0) return;
    if (c.length !== 32) throw refusal('node reference', 'a 32-byte hash or an embedded node', `${c.length} bytes`);
    stack.push({ hash: c, kind });
  };

  const leaf = (value: Uint8Array, kind: Kind): void => {
    if (kind === STORAGE) {
      stats.slots++;
      return;
    }
    stats.accounts++;
    const fields = RLP.decode(value) as Nested;
    if (!Array.isArray(fields) || fields.length !== 4)
      throw refusal('account', 'an account of 4 fields', bytesToHex(value));
    const [, , storageRoot, codeHash] = fields as Uint8Array[];
    if (!(storageRoot instanceof Uint8Array) || storageRoot.length !== 32)
      throw refusal('account', 'a storage root', '');
    if (!(codeHash instanceof Uint8Array) || codeHash.length !== 32) throw refusal('account', 'a code hash', '');
    if (!equalsBytes(storageRoot, KECCAK256_RLP)) {
      const k = bytesToHex(storageRoot);
      if (!seenStorage.has(k)) {
        seenStorage.add(k);
        stack.push({ hash: storageRoot, kind: STORAGE });
      }
    }
    if (!equalsBytes(codeHash, KECCAK256_NULL)) {
      const k = bytesToHex(codeHash);
      if (!seenCode.has(k)) {
        seenCode.add(k);
        if (o.sink.hasCode(codeHash)) stats.codes++;
        else codes.push(codeHash);
      }
    }
  };

  const visit = (node: Nested, kind: Kind): void => {
    if (!Array.isArray(node)) throw refusal('node', 'a list', 'bytes');
    if (node.length === 17) {
      for (let i = 0; i < 16; i++) child(node[i] as Nested, kind);
      const v = node[16];
      if (v instanceof Uint8Array && v.length > 0) leaf(v, kind);
      return;
    }
    if (node.length !== 2) throw refusal('node', 'a branch, extension or leaf', `a list of ${node.length}`);
    const path = node[0];
    if (!(path instanceof Uint8Array) || path.length === 0) throw refusal('node', 'a compact path', '');
    const flag = (path[0] as number) >> 4;
    if (flag >= 2) {
      const v = node[1];
      if (!(v instanceof Uint8Array)) throw refusal('leaf', 'a value', 'a list');
      leaf(v, kind);
    } else child(node[1] as Nested, kind);
  };

  const take = (bytes: Uint8Array, kind: Kind): void => {
    visit(RLP.decode(bytes) as Nested, kind);
  };

  const flush = async (force: boolean): Promise<void> => {
    if (!force && pendingNodes.length + pendingCodes.length < writeRows) return;
    const nodes = pendingNodes.splice(0);
    const cs = pendingCodes.splice(0);
    // One write at a time, in order: a write waits for the one before (each is durable before the next).
    const prev = writing;
    writing = (async () => {
      await prev;
      if (nodes.length > 0 || cs.length > 0) await o.sink.write(nodes, cs);
    })();
    await writing;
  };

  /** One request: `batch` node hashes and some code hashes, each answer checked by its keccak. */
  const fetchBatch = async (batch: Work[], codeBatch: Uint8Array[]): Promise<void> => {
    stats.requests++;
    let reply: unknown;
    try {
      reply = await o.client.call('chainnode_getStateNodes', [
        batch.map((w) => bytesToHex(w.hash)),
        codeBatch.map((h) => bytesToHex(h)),
      ]);
    } catch (err) {
      throw notServed(err, origin);
    }
    const r = reply as { nodes?: unknown; codes?: unknown } | null;
    if (r === null || typeof r !== 'object' || !Array.isArray(r.nodes) || !Array.isArray(r.codes))
      throw new UpstreamError(`${origin}: chainnode_getStateNodes reply is not {nodes, codes}`);
    if (r.nodes.length !== batch.length || r.codes.length !== codeBatch.length)
      throw new UpstreamError(
        `${origin}: chainnode_getStateNodes answered ${r.nodes.length} nodes for ${batch.length}`,
      );
    for (let i = 0; i < batch.length; i++) {
      const w = batch[i] as Work;
      const bytes = wireBytes(r.nodes[i]);
      if (bytes === undefined || bytes.length === 0)
        throw new UpstreamError(
          `${origin} does not hold trie node ${bytesToHex(w.hash)} of block ${o.block}'s state (its state trie's window?)`,
        );
      const got = keccak256(bytes);
      if (!equalsBytes(got, w.hash)) throw refusal('trie node', bytesToHex(w.hash), bytesToHex(got));
      take(bytes, w.kind);
      pendingNodes.push({ hash: w.hash, bytes });
      stats.fetched++;
      stats.bytes += bytes.length;
    }
    for (let i = 0; i < codeBatch.length; i++) {
      const h = codeBatch[i] as Uint8Array;
      const bytes = wireBytes(r.codes[i]);
      if (bytes === undefined)
        throw new UpstreamError(`${origin} does not hold code ${bytesToHex(h)} of block ${o.block}'s state`);
      const got = keccak256(bytes);
      if (!equalsBytes(got, h)) throw refusal('code', bytesToHex(h), bytesToHex(got));
      pendingCodes.push({ hash: h, bytes });
      stats.codes++;
      stats.bytes += bytes.length;
    }
    await flush(false);
  };

  /** Takes the next batch off the stack: nodes already stored are walked from the datadir instead. */
  const nextBatch = (): { nodes: Work[]; codes: Uint8Array[] } => {
    const nodes: Work[] = [];
    let read = 0;
    while (nodes.length < batchNodes && stack.length > 0 && read < LOCAL_PER_TURN) {
      const w = stack.pop() as Work;
      const local = o.sink.node(w.hash);
      if (local !== undefined) {
        stats.local++;
        read++;
        take(local, w.kind);
        continue;
      }
      nodes.push(w);
    }
    return { nodes, codes: codes.splice(0, MAX_CODES) };
  };

  const started = Date.now();
  let lastLog = started;
  const progress = (final: boolean): void => {
    const now = Date.now();
    if (!final && now - lastLog < (o.progressMs ?? 5000)) return;
    lastLog = now;
    o.log?.(
      `follow: state of block ${o.block}${final ? ' whole' : ''}: ${stats.fetched + stats.local} trie nodes (${stats.local} already here), ${stats.accounts} accounts, ${stats.slots} storage slots, ${stats.codes} codes, ${(stats.bytes / 2 ** 20).toFixed(1)} MiB in ${((now - started) / 1000).toFixed(1)} s`,
    );
  };

  if (!equalsBytes(o.stateRoot, KECCAK256_RLP)) stack.push({ hash: o.stateRoot, kind: ACCOUNT });
  const running = new Set<Promise<void>>();
  let failure: unknown;
  while (failure === undefined && (stack.length > 0 || codes.length > 0 || running.size > 0)) {
    if (o.signal?.aborted) break;
    while (running.size < inFlight && (stack.length > 0 || codes.length > 0)) {
      const b = nextBatch();
      if (b.nodes.length === 0 && b.codes.length === 0) break; // only stored nodes this turn: yield below
      const p: Promise<void> = fetchBatch(b.nodes, b.codes).then(
        () => {
          running.delete(p);
        },
        (err: unknown) => {
          running.delete(p);
          failure ??= err;
        },
      );
      running.add(p);
    }
    if (running.size > 0) await Promise.race(running);
    else await new Promise((r) => setImmediate(r));
    o.onProgress?.(stats);
    progress(false);
  }
  await Promise.allSettled(running);
  if (failure !== undefined) {
    // What was verified is kept: a resumed walk reads it instead of asking again.
    await flush(true).catch(() => undefined);
    throw failure;
  }
  await flush(true);
  stats.complete = !(o.signal?.aborted ?? false);
  if (stats.complete) progress(true);
  return stats;
}
