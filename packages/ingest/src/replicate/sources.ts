// Where replicated blocks come from. Each source turns an upstream's answers into a ReplicaBlock;
// nothing it says is trusted: block.ts recomputes every root and state.ts the state root.
//
// - chainnode: a chainnode primary's raw block (debug_getRawBlock), raw receipts
//   (debug_getRawReceipts) and whole-block trie diff (chainnode_getStateDiff).
// - prestate: geth/reth/Erigon/Nethermind/anvil: the block's JSON with full transactions,
//   eth_getBlockReceipts, and debug_traceBlockByHash with the prestateTracer in diffMode; the
//   block-level changes the traces omit are applied here (block-level.ts).
// - parity: the same, with trace_replayBlockTransactions ["stateDiff"] for the diffs.
import { RLP } from '@ethereumjs/rlp';
import type { Common } from '@ethereumjs/common';
import { bytesToHex, equalsBytes, hexToBytes } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/store';
import { chainFamilyOf, decodeHeader, encodeNested, opForkActive, uintBytes, wireBytes } from '@chainnode/core';
import type { HeaderRecord } from '@chainnode/core';
import { BlockVerificationError, UpstreamError } from '../errors.js';
import { UpstreamRpcError } from '@chainnode/core';
import type { UpstreamClient } from '@chainnode/core';
import type { RpcBlockSource } from '../rpc-source.js';
import {
  UnsupportedBlockLevelChange,
  applyAnvilOpStackReads,
  applyPostTransactions,
  applyPreTransactions,
} from './block-level.js';
import type { ReplicaBlock } from './block.js';
import { hexList, receiptFromJson, receiptFromRaw, txFromBody, txFromBodySigning, txFromJson } from './envelopes.js';
import { senderPool } from './sender-pool.js';
import { recoverSender } from './senders.js';
import type { SigningParts } from './senders.js';
import type { ReplicaReceipt, ReplicaTx } from './envelopes.js';
import { StateMismatch } from './state.js';
import type { StateOverlay } from './state.js';
import type { ReplicationTimings } from './timings.js';

export type StateSourceKind = 'chainnode' | 'prestate' | 'parity';

export interface ReplicaSource {
  readonly kind: StateSourceKind;
  byNumber(n: bigint): Promise<ReplicaBlock | undefined>;
  byHash(hash: Uint8Array): Promise<ReplicaBlock | undefined>;
  /**
   * Blocks [from, to] in order, in as few requests as the upstream allows: a prefix of them (the
   * upstream's caps, or its head); empty when it has none of them. Absent: block by block.
   */
  range?(from: bigint, to: bigint): Promise<ReplicaBlock[]>;
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
const QTY = /^0x[0-9a-fA-F]{1,64}$/;
const qhex = (n: bigint): string => `0x${n.toString(16)}`;

function obj(v: unknown, what: string, origin: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new UpstreamError(`${origin}: ${what} is not an object`);
  return v as Record<string, unknown>;
}

function hashField(o: Record<string, unknown>, name: string, what: string, origin: string): Uint8Array {
  const b = wireBytes(o[name]);
  if (b === undefined || b.length !== 32) throw new UpstreamError(`${origin}: ${what} has no valid "${name}"`);
  return b;
}

function qtyField(o: Record<string, unknown>, name: string, what: string, origin: string): bigint {
  const v = o[name];
  if (typeof v !== 'string' || !QTY.test(v)) throw new UpstreamError(`${origin}: ${what} has no valid "${name}"`);
  return BigInt(v);
}

/** Wraps a decoding failure of block `n`'s data as the verification error it is. */
function decoding<T>(n: bigint, field: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof BlockVerificationError || err instanceof UpstreamError) throw err;
    throw new BlockVerificationError(n, field, 'a decodable value', (err as Error).message, 'upstream');
  }
}

/** A decoded signed transaction whose sender is still to be recovered. */
interface Unsigned {
  n: bigint;
  index: number;
  tx: ReplicaTx;
  signing: SigningParts;
}

/**
 * Fewer signed transactions than this in a range are recovered on the replica's own thread: the
 * worker's round trip is ~0.1 ms, a recovery ~0.1 ms.
 */
const SENDERS_OFF_THREAD = 64;

/**
 * Sets the senders of `unsigned` (in their order): on the sender pool's thread when they are
 * many, else here. A signature that does not recover fails its block as decoding it inline does.
 */
async function recoverSenders(unsigned: Unsigned[], timings: ReplicationTimings | undefined): Promise<void> {
  if (unsigned.length === 0) return;
  const senders =
    unsigned.length >= SENDERS_OFF_THREAD ? await senderPool.recover(unsigned.map((u) => u.signing)) : undefined;
  const t0 = performance.now();
  try {
    unsigned.forEach((u, i) => {
      const sender = senders?.[i];
      u.tx.sender = sender ?? decoding(u.n, `transaction ${u.index} encoding`, () => recoverSender(u.signing));
    });
  } finally {
    if (timings !== undefined) timings.decodeMs += performance.now() - t0;
  }
}

/** A state-level failure inside `changes`: the block's error. */
async function stateStep(n: bigint, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof StateMismatch)
      throw new BlockVerificationError(n, err.field, err.upstream, err.computed, 'upstream');
    if (err instanceof UnsupportedBlockLevelChange)
      throw new BlockVerificationError(n, 'stateRoot', 'a block-level change', err.message, 'upstream');
    throw err;
  }
}

// ---- chainnode primary ------------------------------------------------------------------------

/** A chainnode primary: raw block, raw receipts and the whole-block trie diff. */
export class ChainnodeSource implements ReplicaSource {
  readonly kind = 'chainnode';
  constructor(
    private readonly client: UpstreamClient,
    private readonly timings?: ReplicationTimings | undefined,
    /** History only: the raw block and receipts, no state diff (its blocks' `changes` throw). */
    private readonly history = false,
  ) {}

  byNumber(n: bigint): Promise<ReplicaBlock | undefined> {
    return this.fetch(qhex(n), undefined);
  }

  byHash(hash: Uint8Array): Promise<ReplicaBlock | undefined> {
    return this.fetch(bytesToHex(hash), hash);
  }

  /** Whether the primary answers chainnode_getBlockRange (an older one does not: block by block). */
  private ranges = true;

  /**
   * chainnode_getBlockRange: blocks [from, to] in one request, each checked to be the number it
   * stands for. A primary without the method: up to FALLBACK_BLOCKS of them block by block.
   */
  async range(from: bigint, to: bigint): Promise<ReplicaBlock[]> {
    if (this.history) throw new Error('a history-only source fetches block by block');
    const origin = this.client.origin;
    const reply = this.ranges
      ? await this.client.call('chainnode_getBlockRange', [qhex(from), qhex(to)]).catch((err: unknown) => {
          if (!(err instanceof UpstreamRpcError && err.code === -32601)) throw err;
          this.ranges = false;
          return undefined;
        })
      : undefined;
    if (reply === undefined) return this.blockByBlock(from, to);
    if (!Array.isArray(reply)) throw new UpstreamError(`${origin}: chainnode_getBlockRange reply is not a list`);
    const t0 = performance.now();
    const unsigned: Unsigned[] = [];
    let blocks: ReplicaBlock[];
    try {
      blocks = reply.map((e, i) => {
        const o = obj(e, 'chainnode_getBlockRange block', origin);
        const b = this.decode(o.block, o.receipts, o.stateDiff, undefined, unsigned);
        if (b.number !== from + BigInt(i))
          throw new UpstreamError(`${origin}: chainnode_getBlockRange from ${from}: entry ${i} is block ${b.number}`);
        return b;
      });
    } finally {
      if (this.timings !== undefined) this.timings.decodeMs += performance.now() - t0;
    }
    await recoverSenders(unsigned, this.timings);
    return blocks;
  }

  /** Blocks [from, to] (at most FALLBACK_BLOCKS of them) by the three per-block calls; stops at a gap. */
  private async blockByBlock(from: bigint, to: bigint): Promise<ReplicaBlock[]> {
    const count = Math.min(Number(to - from + 1n), FALLBACK_BLOCKS);
    const blocks = await Promise.all(Array.from({ length: count }, (_, i) => this.byNumber(from + BigInt(i))));
    const gap = blocks.indexOf(undefined);
    return (gap === -1 ? blocks : blocks.slice(0, gap)) as ReplicaBlock[];
  }

  private async fetch(id: string, wantHash: Uint8Array | undefined): Promise<ReplicaBlock | undefined> {
    const [rawBlock, rawReceipts, diff] = await Promise.all([
      this.client.call('debug_getRawBlock', [id]),
      this.client.call('debug_getRawReceipts', [id]),
      this.history
        ? Promise.resolve(HISTORY_ONLY)
        : this.client.call('chainnode_getStateDiff', [id]).catch((err: unknown) => {
            if (err instanceof UpstreamRpcError && /not found/i.test(err.message)) return null;
            throw err;
          }),
    ]);
    if (rawBlock === null || rawBlock === '0x' || diff === null) return undefined;
    const t0 = performance.now();
    try {
      return this.decode(rawBlock, rawReceipts, diff, wantHash);
    } finally {
      if (this.timings !== undefined) this.timings.decodeMs += performance.now() - t0;
    }
  }

  /** With `unsigned`: the signed transactions' senders are left to the caller (recoverSenders). */
  private decode(
    rawBlock: unknown,
    rawReceipts: unknown,
    diff: unknown,
    wantHash: Uint8Array | undefined,
    unsigned?: Unsigned[],
  ): ReplicaBlock {
    const origin = this.client.origin;
    const blockBytes = hexList([rawBlock], 'debug_getRawBlock', origin)[0] as Uint8Array;
    let values: unknown[];
    try {
      values = RLP.decode(blockBytes) as unknown[];
    } catch {
      throw new UpstreamError(`${origin}: debug_getRawBlock is not RLP`);
    }
    if (!Array.isArray(values) || values.length < 3 || !Array.isArray(values[0]))
      throw new UpstreamError(`${origin}: debug_getRawBlock is not a block`);
    const headerRlp = encodeNested(values[0] as Uint8Array[]);
    const hash = keccak256(headerRlp);
    if (wantHash !== undefined && !equalsBytes(hash, wantHash))
      throw new UpstreamError(`${origin}: asked for block ${bytesToHex(wantHash)}, got ${bytesToHex(hash)}`);
    const header = decoding(-1n, 'header', () => decodeHeader(headerRlp, hash));
    const n = header.number;
    const txEntries = values[1] as (Uint8Array | Uint8Array[])[];
    const decodeTransactions = (): ReplicaTx[] =>
      txEntries.map((t, i) =>
        decoding(n, `transaction ${i} encoding`, () => {
          if (unsigned === undefined) return txFromBody(t);
          const { tx, signing } = txFromBodySigning(t);
          if (signing !== undefined) unsigned.push({ n, index: i, tx, signing });
          return tx;
        }),
      );
    const decodeReceipts = () =>
      hexList(rawReceipts, 'debug_getRawReceipts', origin).map((r, i) =>
        decoding(n, `receipt ${i} encoding`, () => receiptFromRaw(r)),
      );
    const block = (
      transactions: ReplicaTx[],
      receipts: ReplicaBlock['receipts'],
      changes: ReplicaBlock['changes'],
    ): ReplicaBlock => ({
      number: n,
      hash,
      parentHash: header.parentHash,
      timestamp: header.timestamp,
      headerRlp,
      header,
      transactions,
      uncles: values[2] as Uint8Array[][],
      withdrawals: values[3] as Uint8Array[][] | undefined,
      receipts,
      size: blockBytes.length,
      changes,
    });
    if (diff === HISTORY_ONLY) {
      const receipts = decodeReceipts();
      return block(decodeTransactions(), receipts, noStateChanges(n));
    }
    const d = obj(diff, 'chainnode_getStateDiff reply', origin);
    const diffHash = hashField(d, 'blockHash', 'chainnode_getStateDiff reply', origin);
    // Asked by number, the three answers may straddle a reorg on the primary: retried.
    if (!equalsBytes(diffHash, hash))
      throw new UpstreamError(
        `${origin}: block ${n}: the state diff is of ${bytesToHex(diffHash)}, the block is ${bytesToHex(hash)} (reorging?)`,
      );
    const transactions = decodeTransactions();
    const receipts = decodeReceipts();
    const accounts = d.accounts;
    if (!Array.isArray(accounts))
      throw new UpstreamError(`${origin}: chainnode_getStateDiff reply has no accounts list`);
    return block(transactions, receipts, (overlay) => stateStep(n, () => applyTrieDiff(overlay, accounts, origin)));
  }
}

/** Blocks a range asked of a primary without chainnode_getBlockRange fetches at once. */
const FALLBACK_BLOCKS = 8;

/** chainnode_getStateDiff's accounts into the overlay (hashed keys; storage roots recomputed). */
async function applyTrieDiff(overlay: StateOverlay, accounts: unknown[], origin: string): Promise<void> {
  const what = 'chainnode_getStateDiff account';
  for (const a of accounts) {
    const o = obj(a, what, origin);
    const key = hashField(o, 'key', what, origin);
    if (o.account === null) {
      await overlay.remove(key);
      continue;
    }
    const acct = obj(o.account, what, origin);
    const codeHash = hashField(acct, 'codeHash', what, origin);
    if (o.code !== undefined) overlay.provideCode(codeHash, hexList([o.code], 'code', origin)[0] as Uint8Array);
    await overlay.setFields(key, {
      nonce: qtyField(acct, 'nonce', what, origin),
      balance: qtyField(acct, 'balance', what, origin),
      codeHash,
    });
    await overlay.claimStorageRoot(key, hashField(acct, 'storageRoot', what, origin));
    const storage = o.storage ?? [];
    if (!Array.isArray(storage)) throw new UpstreamError(`${origin}: ${what} storage is not a list`);
    for (const s of storage) {
      const slot = Array.isArray(s) && s.length === 2 ? wireBytes(s[0]) : undefined;
      if (slot === undefined || slot.length !== 32)
        throw new UpstreamError(`${origin}: ${what} storage entry is malformed`);
      const value = s[1] === null ? new Uint8Array(0) : valueBytes(s[1], origin);
      await overlay.setStorage(key, slot, value);
    }
  }
}

function valueBytes(v: unknown, origin: string): Uint8Array {
  if (typeof v !== 'string' || !QTY.test(v)) throw new UpstreamError(`${origin}: a storage value is not a quantity`);
  return wireBytes(v.length % 2 === 1 ? `0x0${v.slice(2)}` : v) as Uint8Array;
}

/** The diff slot of a history-only fetch (no state diff asked). */
const HISTORY_ONLY = Symbol('history only');

/** A history-only block has no state changes to apply: asking for them is a programming error. */
function noStateChanges(n: bigint): (overlay: StateOverlay) => Promise<void> {
  return async () => {
    throw new Error(`block ${n} was fetched history-only: it carries no state changes`);
  };
}

// ---- tracer upstreams (geth, reth, Erigon, Nethermind, anvil) ---------------------------------

/** A block's receipts and state diffs asked by number beside the block itself (TracerSource.byNumber). */
interface EarlyParts {
  receipts: Promise<unknown>;
  traces: Promise<unknown>;
}

/** A block from its JSON, its receipts' JSON and per-transaction state diffs. */
export class TracerSource implements ReplicaSource {
  constructor(
    readonly kind: 'prestate' | 'parity',
    private readonly client: UpstreamClient,
    private readonly blocks: RpcBlockSource,
    private readonly common: Common,
    /**
     * The upstream: whether it is anvil (its trie keeps the slots a block sets to zero, and on an
     * OP-stack chain the L1 fee reads of block-level.ts), and an OP-stack chain's genesis.json.
     */
    private readonly upstream: { anvil: boolean; opGenesis?: Record<string, unknown> | undefined } = { anvil: false },
    private readonly timings?: ReplicationTimings | undefined,
    /** History only: no state diffs asked (its blocks' `changes` throw). */
    private readonly history = false,
  ) {}

  /**
   * Block `n`, its receipts and its state diffs asked together, by number: the receipts and
   * diffs are taken when they name the block's transactions (else asked again by the block's
   * hash: the upstream's block `n` changed between the requests), so the block's own round
   * trip is not waited for first.
   */
  async byNumber(n: bigint): Promise<ReplicaBlock | undefined> {
    const early: EarlyParts | undefined = this.history
      ? undefined
      : { receipts: this.client.call('eth_getBlockReceipts', [qhex(n)]), traces: this.traces(qhex(n)) };
    early?.receipts.catch(() => undefined);
    early?.traces.catch(() => undefined);
    const json = await this.client.call('eth_getBlockByNumber', [qhex(n), true]);
    return json === null ? undefined : this.build(json, early);
  }

  /** The state diffs of a block (by hash, or by number: a quantity). */
  private traces(block: string): Promise<unknown> {
    if (this.kind === 'parity') return this.client.call('trace_replayBlockTransactions', [block, ['stateDiff']]);
    const config = { tracer: 'prestateTracer', tracerConfig: { diffMode: true } };
    return block.length === 66
      ? this.client.call('debug_traceBlockByHash', [block, config])
      : this.client.call('debug_traceBlockByNumber', [block, config]);
  }

  async byHash(hash: Uint8Array): Promise<ReplicaBlock | undefined> {
    const json = await this.client.call('eth_getBlockByHash', [bytesToHex(hash), true]);
    if (json === null) return undefined;
    const b = await this.build(json);
    if (!equalsBytes(b.hash, hash))
      throw new UpstreamError(`${this.client.origin}: asked for block ${bytesToHex(hash)}, got ${bytesToHex(b.hash)}`);
    return b;
  }

  private async build(json: unknown, early?: EarlyParts): Promise<ReplicaBlock> {
    const origin = this.client.origin;
    const o = obj(json, 'block reply', origin);
    const header = this.blocks.headerFromJson(o); // hashes to the stated hash, else stops
    const headerRlp = header.serialize();
    const hash = header.hash();
    const n = header.number;
    const hashHex = bytesToHex(hash);
    const txJson = o.transactions;
    if (!Array.isArray(txJson)) throw new UpstreamError(`${origin}: block ${n} has no transaction list`);
    const uncleHashes = o.uncles ?? [];
    if (!Array.isArray(uncleHashes) || uncleHashes.length > 2)
      throw new UpstreamError(`${origin}: block ${n} has an invalid uncle list`);
    // Parts asked by number are this block's when each names its transaction, in order.
    const txHashes = txJson.map((t) => (t as { hash?: unknown } | null)?.hash);
    const ofThisBlock = (parts: unknown, name: (part: Record<string, unknown>) => unknown): boolean =>
      Array.isArray(parts) &&
      parts.length === txHashes.length &&
      parts.every((p, i) => typeof p === 'object' && p !== null && name(p as Record<string, unknown>) === txHashes[i]);
    const taken = (asked: Promise<unknown> | undefined, name: (part: Record<string, unknown>) => unknown) =>
      asked?.then((parts) => (ofThisBlock(parts, name) ? parts : undefined)).catch(() => undefined);
    // Decoded (senders recovered) while the receipts and diffs asked beside are still on their way.
    const transactions: ReplicaTx[] = [];
    for (let i = 0; i < txJson.length; i++) {
      const t = txJson[i] as unknown;
      let tx: ReplicaTx;
      try {
        tx = await txFromJson(t, this.common);
      } catch (err) {
        throw new BlockVerificationError(
          n,
          `transaction ${i} encoding`,
          'a decodable value',
          (err as Error).message,
          'upstream',
        );
      }
      const stated = (t as { hash?: unknown }).hash;
      if (typeof stated !== 'string' || !equalsBytes(hexToBytes(stated as `0x${string}`), tx.hash))
        throw new BlockVerificationError(
          n,
          `transaction ${i} hash`,
          String(stated),
          `${bytesToHex(tx.hash)} (rebuilt from the upstream's fields)`,
          'upstream',
        );
      transactions.push(tx);
    }
    const [earlyReceipts, earlyTraces] = await Promise.all([
      taken(early?.receipts, (r) => (r.blockHash === hashHex ? r.transactionHash : undefined)),
      taken(early?.traces, (t) => (this.kind === 'prestate' ? t.txHash : t.transactionHash)),
    ]);
    const [receiptsJson, traces, uncleJson] = await Promise.all([
      earlyReceipts ?? this.client.call('eth_getBlockReceipts', [hashHex]),
      this.history ? Promise.resolve([]) : (earlyTraces ?? this.traces(this.kind === 'prestate' ? hashHex : qhex(n))),
      Promise.all(
        uncleHashes.map((_, i) => this.client.call('eth_getUncleByBlockHashAndIndex', [hashHex, qhex(BigInt(i))])),
      ),
    ]);
    const uncleRlps = uncleJson.map((u, i) => {
      if (u === null) throw new UpstreamError(`${origin}: block ${n}: uncle ${i} not served`);
      const uh = this.blocks.headerFromJson(u);
      const want = uncleHashes[i];
      if (typeof want !== 'string' || !equalsBytes(uh.hash(), hexToBytes(want as `0x${string}`)))
        throw new BlockVerificationError(n, `uncle ${i} hash`, String(want), bytesToHex(uh.hash()), 'upstream');
      return uh.serialize();
    });
    const uncleHeaders: HeaderRecord[] = uncleRlps.map((r) => decodeHeader(r));
    const t0 = performance.now();
    if (!Array.isArray(receiptsJson))
      throw new UpstreamError(`${origin}: eth_getBlockReceipts of block ${n} is not a list`);
    const receipts: ReplicaReceipt[] = receiptsJson.map((r, i) =>
      decoding(n, `receipt ${i}`, () => receiptFromJson(r)),
    );
    if (!Array.isArray(traces)) throw new UpstreamError(`${origin}: the state diffs of block ${n} are not a list`);
    if (!this.history && traces.length !== transactions.length)
      throw new UpstreamError(
        `${origin}: block ${n}: ${traces.length} state diffs for ${transactions.length} transactions (parent state pruned?)`,
      );
    const withdrawals = withdrawalsFromJson(o.withdrawals, n, origin);
    const uncleValues = uncleRlps.map((r) => RLP.decode(r) as Uint8Array[]);
    const bodyTxs = transactions.map((t) => (t.type === 0 ? (RLP.decode(t.bytes) as Uint8Array[]) : t.bytes));
    const size = RLP.encode([
      RLP.decode(headerRlp) as Uint8Array[],
      bodyTxs,
      uncleValues,
      ...(withdrawals !== undefined ? [withdrawals] : []),
    ] as never).length;
    const headerRec = decodeHeader(headerRlp, hash);
    const kind = this.kind;
    const common = this.common;
    const { anvil, opGenesis } = this.upstream;
    // OP-stack from Isthmus: no EIP-7002/7251 request calls (op-stack.ts).
    const noRequests = opGenesis !== undefined && opForkActive(opGenesis, 'isthmus', headerRec.timestamp);
    if (this.timings !== undefined) this.timings.decodeMs += performance.now() - t0;
    return {
      number: n,
      hash,
      parentHash: headerRec.parentHash,
      timestamp: headerRec.timestamp,
      headerRlp,
      header: headerRec,
      transactions,
      uncles: uncleValues,
      withdrawals,
      receipts,
      size,
      changes: this.history
        ? noStateChanges(n)
        : (overlay) =>
            stateStep(n, async () => {
              await applyPreTransactions(overlay, common, headerRec);
              for (let i = 0; i < traces.length; i++) {
                const t = obj(traces[i], 'state diff', origin);
                const txHash = kind === 'prestate' ? t.txHash : t.transactionHash;
                if (
                  txHash !== undefined &&
                  (typeof txHash !== 'string' ||
                    !equalsBytes(hexToBytes(txHash as `0x${string}`), (transactions[i] as ReplicaTx).hash))
                )
                  throw new UpstreamError(`${origin}: block ${n}: state diff ${i} is of transaction ${String(txHash)}`);
                if (kind === 'prestate') await applyPrestateDiff(overlay, t, n, i, origin, anvil);
                else await applyParityDiff(overlay, t, origin, anvil);
              }
              if (anvil && opGenesis !== undefined)
                await applyAnvilOpStackReads(
                  overlay,
                  transactions.map((t) => t.type),
                );
              await applyPostTransactions(overlay, common, headerRec, uncleHeaders, withdrawals, noRequests);
            }),
    };
  }
}

function withdrawalsFromJson(v: unknown, n: bigint, origin: string): Uint8Array[][] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new UpstreamError(`${origin}: block ${n} withdrawals are not a list`);
  return v.map((w) => {
    const o = obj(w, 'withdrawal', origin);
    const addr = o.address;
    if (typeof addr !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(addr))
      throw new UpstreamError(`${origin}: a withdrawal has no valid address`);
    return [
      uintBytes(qtyField(o, 'index', 'withdrawal', origin)),
      uintBytes(qtyField(o, 'validatorIndex', 'withdrawal', origin)),
      hexToBytes(addr as `0x${string}`),
      uintBytes(qtyField(o, 'amount', 'withdrawal', origin)),
    ];
  });
}

const addrBytes = (a: string, origin: string): Uint8Array => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(a)) throw new UpstreamError(`${origin}: a state diff names an invalid address`);
  return hexToBytes(a.toLowerCase() as `0x${string}`);
};
const slotBytes = (s: string, origin: string): Uint8Array => {
  if (!HASH.test(s)) throw new UpstreamError(`${origin}: a state diff names an invalid storage slot`);
  return hexToBytes(s as `0x${string}`);
};
const quantityOf = (v: unknown, what: string, origin: string): bigint => {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === 'string' && QTY.test(v)) return BigInt(v);
  throw new UpstreamError(`${origin}: a state diff's ${what} is not a quantity`);
};
const dataOf = (v: unknown, what: string, origin: string): Uint8Array => hexList([v], what, origin)[0] as Uint8Array;

/**
 * One transaction's prestateTracer diffMode result: `post` holds changed fields' new values; an
 * account in `pre` and not in `post` was deleted; a slot in `pre.storage` and not in
 * `post.storage` became zero (geth deletes it from the trie; anvil, `zeroLeaves`, keeps it as a
 * zero-valued leaf).
 */
async function applyPrestateDiff(
  overlay: StateOverlay,
  t: Record<string, unknown>,
  n: bigint,
  i: number,
  origin: string,
  zeroLeaves: boolean,
): Promise<void> {
  if (t.error !== undefined)
    throw new UpstreamError(`${origin}: block ${n}: tracing transaction ${i} failed: ${String(t.error).slice(0, 200)}`);
  const r = obj(t.result, 'prestate diff', origin);
  const pre = obj(r.pre ?? {}, 'prestate diff pre', origin);
  const post = obj(r.post ?? {}, 'prestate diff post', origin);
  for (const addr of Object.keys(pre)) {
    if (addr in post) continue;
    await overlay.remove(keccak256(addrBytes(addr, origin)), addr.toLowerCase());
  }
  for (const [addr, v] of Object.entries(post)) {
    const a = addrBytes(addr, origin);
    const key = keccak256(a);
    const name = addr.toLowerCase();
    const acct = obj(v, 'prestate diff account', origin);
    const fields: { nonce?: bigint; balance?: bigint } = {};
    if (acct.balance !== undefined) fields.balance = quantityOf(acct.balance, 'balance', origin);
    if (acct.nonce !== undefined) fields.nonce = quantityOf(acct.nonce, 'nonce', origin);
    await overlay.setFields(key, fields, name);
    if (acct.code !== undefined) await overlay.setCode(key, dataOf(acct.code, 'code', origin), name);
    const preStorage = obj((pre[addr] as Record<string, unknown> | undefined)?.storage ?? {}, 'storage', origin);
    const postStorage = obj(acct.storage ?? {}, 'storage', origin);
    for (const slot of Object.keys(preStorage))
      if (!(slot in postStorage))
        await overlay.setStorage(key, keccak256(slotBytes(slot, origin)), new Uint8Array(0), name, zeroLeaves);
    for (const [slot, value] of Object.entries(postStorage))
      await overlay.setStorage(
        key,
        keccak256(slotBytes(slot, origin)),
        slotBytes(String(value), origin),
        name,
        zeroLeaves,
      );
  }
}

/**
 * One transaction's Parity stateDiff: "=", {"+": v}, {"-": v}, {"*": {from, to}} per field; a
 * slot set to zero kept as a zero-valued leaf with `zeroLeaves` (anvil's trie, as above).
 */
async function applyParityDiff(
  overlay: StateOverlay,
  t: Record<string, unknown>,
  origin: string,
  zeroLeaves: boolean,
): Promise<void> {
  const diff = obj(t.stateDiff ?? {}, 'stateDiff', origin);
  const after = (d: unknown): unknown | undefined | null => {
    if (d === '=' || d === undefined) return undefined; // unchanged
    const o = obj(d, 'stateDiff delta', origin);
    if ('+' in o) return o['+'];
    if ('-' in o) return null; // removed
    if ('*' in o) return obj(o['*'], 'stateDiff change', origin).to;
    throw new UpstreamError(`${origin}: a stateDiff delta is not =, +, - or *`);
  };
  for (const [addr, v] of Object.entries(diff)) {
    const a = addrBytes(addr, origin);
    const key = keccak256(a);
    const name = addr.toLowerCase();
    const acct = obj(v, 'stateDiff account', origin);
    const balance = after(acct.balance);
    if (balance === null) {
      await overlay.remove(key, name); // the account died
      continue;
    }
    const fields: { nonce?: bigint; balance?: bigint } = {};
    if (balance !== undefined) fields.balance = quantityOf(balance, 'balance', origin);
    const nonce = after(acct.nonce);
    if (nonce !== undefined && nonce !== null) fields.nonce = quantityOf(nonce, 'nonce', origin);
    await overlay.setFields(key, fields, name);
    const code = after(acct.code);
    if (code !== undefined)
      await overlay.setCode(key, code === null ? new Uint8Array(0) : dataOf(code, 'code', origin), name);
    for (const [slot, d] of Object.entries(obj(acct.storage ?? {}, 'stateDiff storage', origin))) {
      const value = after(d);
      if (value === undefined) continue;
      await overlay.setStorage(
        key,
        keccak256(slotBytes(slot, origin)),
        value === null ? new Uint8Array(0) : slotBytes(String(value), origin),
        name,
        zeroLeaves,
      );
    }
  }
}

/**
 * The source of a history-only ingest (a datadir that joined its chain): a chainnode primary's
 * (or any upstream's) raw blocks and raw receipts when it serves debug_getRawReceipts, else the
 * block JSON with full transactions and eth_getBlockReceipts, which every upstream serves. No
 * state is asked for.
 */
export async function chooseHistorySource(
  client: UpstreamClient,
  blocks: RpcBlockSource,
  common: Common,
  timings?: ReplicationTimings,
): Promise<ReplicaSource> {
  let raw = false;
  try {
    const r = await client.call('debug_getRawReceipts', ['0x0']);
    raw = Array.isArray(r);
  } catch (err) {
    if (!(err instanceof UpstreamRpcError)) throw err;
  }
  return raw
    ? new ChainnodeSource(client, timings, true)
    : new TracerSource('prestate', client, blocks, common, { anvil: false }, timings, true);
}

/**
 * Picks the best state source the upstream offers: a chainnode primary's trie diff, else geth's
 * prestateTracer, else Parity's stateDiff. `forced` skips the probe.
 */
export async function chooseReplicaSource(
  client: UpstreamClient,
  blocks: RpcBlockSource,
  common: Common,
  genesis: Record<string, unknown>,
  forced?: StateSourceKind,
  timings?: ReplicationTimings,
): Promise<ReplicaSource> {
  const version = await client.call('web3_clientVersion', []).catch(() => '');
  const upstream = {
    anvil: typeof version === 'string' && version.startsWith('anvil/'),
    ...(chainFamilyOf(genesis) === 'optimism' ? { opGenesis: genesis } : {}),
  };
  const make = (k: StateSourceKind): ReplicaSource =>
    k === 'chainnode'
      ? new ChainnodeSource(client, timings)
      : new TracerSource(k, client, blocks, common, upstream, timings);
  if (forced !== undefined) return make(forced);
  const offers = async (method: string, params: unknown[]): Promise<boolean> => {
    try {
      await client.call(method, params);
      return true;
    } catch (err) {
      if (err instanceof UpstreamRpcError)
        // anvil over WebSocket answers a method it lacks with -32602 "data did not match any
        // variant of untagged enum EthRpcCall" (over HTTP, -32601).
        return !(
          err.code === -32601 ||
          /not (found|supported|available)|unsupported|did not match any variant/i.test(err.message)
        );
      throw err;
    }
  };
  if (await offers('chainnode_getStateDiff', ['latest'])) return make('chainnode');
  // anvil replays a block's earlier transactions for each one it traces with debug_traceBlock*
  // (5-9 s for a block of ~240 transactions here, ~0.1 s a late one), its Parity stateDiff in one
  // pass (~0.1 s for the same block): from anvil, Parity's stateDiff first.
  const parity = () => offers('trace_replayBlockTransactions', ['0x0', ['stateDiff']]);
  if (upstream.anvil && (await parity())) return make('parity');
  if (await offers('debug_traceBlockByNumber', ['0x0', { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]))
    return make('prestate');
  if (await parity()) return make('parity');
  throw new UpstreamError(
    `${client.origin} offers no state changes to replicate from (chainnode_getStateDiff, debug_traceBlockByHash with prestateTracer, or trace_replayBlockTransactions): use --ingest execute`,
  );
}
