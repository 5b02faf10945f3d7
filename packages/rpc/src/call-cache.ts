// Remembered answers of the calls whose answer is a function of a block hash and their params
// (eth_call, eth_estimateGas, eth_createAccessList: MethodDef.remember). The service resolves the
// call's block to its hash first ("latest", tags and numbers included), keys the answer by
// (method, block hash, canonical encoding of the decoded params) and runs the call pinned to that
// hash, so the answer kept is the one of that block: a reorg or a new head changes the hash a
// number or tag resolves to, and never serves an answer of another block.
//
// Kept: results (their JSON text, so a hit answers exactly the bytes the miss answered) and
// reverts (code 3, with their data). Not kept: every other error (a timeout, a refusal of the
// offload pool, state a joined node has not fetched yet, a missing header), which another try
// may answer differently.
//
// Bounded by bytes: an entry counts its key's and its answer's characters (one byte each: keys
// and answers are ASCII hex and JSON) plus ENTRY_OVERHEAD_BYTES for the Map entry and the
// objects around them. Two generations of half the budget each (core's WeightedLru): a hit
// in the older one moves the entry to the younger, and when the younger is full the older is
// dropped whole. Not one Map trimmed from its oldest entry: each such eviction leaves a deleted
// slot at the front of V8's table that every later trim walks over again, ~20 us a call at the
// default budget's ~74,000 entries once a flood of distinct calls has filled it.
//
// Admitted on the second ask: a miss keeps its answer only when its key was asked before, lately
// (Doorkeeper: a 32-bit hash of each key missed, in a direct-mapped table; TinyLFU's doorkeeper).
// Calls that never repeat (most of a flood of distinct calls) keep nothing: no key copy, no entry
// that lives long enough to be promoted and then dies in the old generation, no generation of
// one-time answers pushing out the ones asked again and again. A call asked twice runs twice.
import { RpcError, WeightedLru } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import { toErrorObject } from './errors.js';
import type { JsonRpcErrorObject } from './errors.js';
import { JsonText, stringifyResult } from './json-text.js';

/**
 * What one entry costs besides its key and answer characters: the Map's slot, the entry object,
 * the two string headers. Measured on Node 20 over 100,000 entries of a balanceOf call (a
 * 216-character key, a 66-byte answer): 454 bytes of heap each, 286 of them characters.
 */
export const ENTRY_OVERHEAD_BYTES = 170;

/** The code of a revert (geth's revertError): the one error kept as an answer. */
const REVERT_CODE = 3;

type Answer =
  | { readonly text: string; readonly size: number }
  | { readonly error: JsonRpcErrorObject; readonly size: number };

/** The counts the metrics show (additive over app threads). */
export interface AnswerCacheStats {
  hits: number;
  misses: number;
  /** Bytes held (as the budget counts them). */
  bytes: number;
  entries: number;
}

/** A call pinned to the block hash its block selector resolved to (MethodDef.remember). */
export interface PinnedCall<P> {
  /** (method, block hash, canonical params): equal keys have one answer. */
  key: string;
  /** The decoded params with the block replaced by its hash. */
  params: P;
  /** The raw params likewise (what an offload worker decodes). */
  raw: unknown[];
}

/** Slots of the doorkeeper: 256 KiB; a key asked again within ~10,000 other misses is still there ~86% of the time. */
const DOORKEEPER_SLOTS = 1 << 16;

/**
 * The keys missed lately, by a 32-bit hash (FNV-1a), one per slot (direct-mapped: a later key of
 * the same slot replaces it). A false "seen" (two keys of one hash and slot) only keeps an answer
 * early; a false "not seen" (replaced) only delays keeping it: the answers stay exact either way.
 */
export class Doorkeeper {
  private readonly slots: Int32Array;
  private readonly mask: number;

  constructor(size = DOORKEEPER_SLOTS) {
    if (!Number.isInteger(Math.log2(size))) throw new RangeError('Doorkeeper: size must be a power of two');
    this.slots = new Int32Array(size);
    this.mask = size - 1;
  }

  /** Whether `key` was recorded (it stays recorded); if not, records it. */
  seen(key: string): boolean {
    let h = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    h |= 1; // 0 marks an empty slot
    const at = (h ^ (h >>> 16)) & this.mask;
    if (this.slots[at] === h) return true;
    this.slots[at] = h;
    return false;
  }
}

export class AnswerCache {
  private readonly entries: WeightedLru<string, Answer>;
  private readonly door = new Doorkeeper();
  private hits = 0;
  private misses = 0;

  constructor(readonly budgetBytes: number) {
    this.entries = new WeightedLru(budgetBytes, (a) => a.size);
  }

  /**
   * The answer kept under `key` (a result as JSON text, or the revert thrown), else run()'s,
   * kept when it is an answer (see the file comment).
   */
  async answer(key: string, run: () => Promise<unknown>): Promise<unknown> {
    const kept = this.entries.get(key);
    if (kept !== undefined) {
      this.hits++;
      if ('text' in kept) return new JsonText(kept.text);
      throw new RpcError(kept.error.code, kept.error.message, kept.error.data);
    }
    this.misses++;
    const admit = this.door.seen(key);
    let text: string;
    try {
      text = stringifyResult(await run());
    } catch (err) {
      if (admit && err instanceof RpcError && err.code === REVERT_CODE) {
        const error = toErrorObject(err);
        this.keep(key, { error, size: JSON.stringify(error).length + key.length + ENTRY_OVERHEAD_BYTES });
      }
      throw err;
    }
    if (admit) this.keep(key, { text, size: text.length + key.length + ENTRY_OVERHEAD_BYTES });
    return new JsonText(text);
  }

  stats(): AnswerCacheStats {
    const { entries, weight } = this.entries.size;
    return { hits: this.hits, misses: this.misses, bytes: weight, entries };
  }

  /** Keeps `answer` (WeightedLru keeps none larger than half the budget: a generation holds half). */
  private keep(built: string, answer: Answer): void {
    // One flat copy: a key built by concatenation is a tree of its parts (about 1.7 times the heap).
    this.entries.set(Buffer.from(built, 'latin1').toString('latin1'), answer);
  }
}

/**
 * One text for equal decoded params whatever their spelling: bytes as hex, bigints as hex
 * quantities, object members and Map entries in key order, absent members left out. Latin-1
 * only (the strings of decoded params are Map keys holding bytes).
 */
export function canonicalParams(v: unknown): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'bigint') return `n${v.toString(16)}`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Uint8Array) return `x${Buffer.from(v as Bytes).toString('hex')}`;
  if (Array.isArray(v)) return `[${v.map(canonicalParams).join(',')}]`;
  const entries: [string, unknown][] = v instanceof Map ? [...v] : Object.entries(v as object);
  return `{${entries
    .filter(([, x]) => x !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, x]) => `${JSON.stringify(k)}:${canonicalParams(x)}`)
    .join(',')}}`;
}
