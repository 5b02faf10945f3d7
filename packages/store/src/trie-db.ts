// The @ethereumjs/mpt DB interface over the TrieNodes table. Keys arrive as unprefixed hex
// strings (the MPT's CheckpointDB uses KeyEncoding.String); values are bytes or hex strings as
// the caller's valueEncoding asks. Archive mode: nodes are content-addressed and never deleted,
// so `del` is ignored.
//
// Writes go to an in-memory overlay: `current` (the block being executed) and `pending`
// (verified blocks of the group not yet written). Reads look at current -> pending -> LevelDB.
import type { BatchDBOp, DB, EncodingOpts } from '@ethereumjs/util';
import { tables } from './schema.js';
import type { KvBatch, KvRead } from './schema.js';

type Value = string | Uint8Array;

function keyBytes(key: string): Uint8Array {
  return Uint8Array.from(Buffer.from(key, 'hex'));
}

function toBytes(v: Value): Uint8Array {
  return typeof v === 'string' ? Uint8Array.from(Buffer.from(v.startsWith('0x') ? v.slice(2) : v, 'hex')) : v;
}

function encodeOut(v: Uint8Array, opts?: EncodingOpts): Value {
  return opts?.valueEncoding === 'string' ? Buffer.from(v).toString('hex') : v;
}

export class TrieNodeDb implements DB<string, Value> {
  private current = new Map<string, Uint8Array>();
  private pending = new Map<string, Uint8Array>();

  constructor(
    private readonly kv: KvRead,
    private readonly writable: boolean,
  ) {}

  async get(key: string, opts?: EncodingOpts): Promise<Value | undefined> {
    const v = this.current.get(key) ?? this.pending.get(key) ?? (await tables.trieNodes.get(this.kv, keyBytes(key)));
    return v === undefined ? undefined : encodeOut(v, opts);
  }

  async put(key: string, val: Value): Promise<void> {
    if (!this.writable) throw new Error('trie db is read-only');
    this.current.set(key, toBytes(val));
  }

  async del(): Promise<void> {
    // archive mode: never delete
  }

  async batch(ops: BatchDBOp<string, Value>[]): Promise<void> {
    for (const op of ops) if (op.type === 'put') await this.put(op.key, op.value);
  }

  shallowCopy(): DB<string, Value> {
    return this;
  }

  async open(): Promise<void> {}

  /** The executed block verified: its nodes join the group to be written. */
  acceptBlock(): void {
    for (const [k, v] of this.current) this.pending.set(k, v);
    this.current.clear();
  }

  /** The executed block failed verification: forget its nodes. */
  rejectBlock(): void {
    this.current.clear();
  }

  /** Moves the group's nodes into `batch`. */
  drainInto(batch: KvBatch): number {
    let n = 0;
    for (const [k, v] of this.pending) {
      tables.trieNodes.put(batch, keyBytes(k), v);
      n++;
    }
    this.pending.clear();
    return n;
  }
}
