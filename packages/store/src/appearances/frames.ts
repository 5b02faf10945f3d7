// The call-frame part of the address-appearance index (schema.ts, FrameAppearances): for each
// transaction of a block whose import recorded its call frames, the addresses those frames name
// that its Appearances do not already hold (an internal call's callee that emits no log, a
// contract created from a contract, a SELFDESTRUCT beneficiary), posted under the transaction's
// appearance id. Each block also keeps the list of the addresses it posted (FrameAddresses), which
// a rewind reads to cut their lists: the frames themselves are exec's opaque rows.
import { concatBytes } from '@chainnode/core';
import type { Db } from '../db.js';
import { APPEARANCE_KIND, MetaKey, Prefix, appearanceId, tables, u64Codec } from '../schema/index.js';
import type { GroupBatch } from '../writer/group-batch.js';
import { ValueTable } from '../writer/value-table.js';
import { touched } from './stage.js';
import type { AppearanceBlock } from './stage.js';

const ADDRESS = 20;

const keyOf = (a: Uint8Array): string => Buffer.from(a.buffer, a.byteOffset, a.length).toString('latin1');

/** The writer's side of FrameAppearances: posted with each recorded block, staged with its group. */
export class FrameAppearanceWriter {
  private readonly values: ValueTable;
  /** Meta.frameAppearancesFrom as the writer leaves it; `stored`: already in the database. */
  private readonly from: { value: bigint; stored: boolean };

  private constructor(cacheBytes: number, head: bigint | undefined, from: bigint | undefined) {
    this.values = new ValueTable(cacheBytes, head === undefined, Prefix.FrameAppearances);
    this.from =
      from !== undefined
        ? { value: from, stored: true }
        : { value: head === undefined ? 0n : head + 1n, stored: false };
  }

  /** The writer of a datadir whose head is `head` (undefined: empty). */
  static async open(db: Db, cacheBytes: number, head: bigint | undefined): Promise<FrameAppearanceWriter> {
    const from = await tables.meta.get(db, MetaKey.FrameAppearancesFrom);
    return new FrameAppearanceWriter(cacheBytes, head, from === undefined ? undefined : u64Codec.decode(from));
  }

  /**
   * Posts block `b`'s frame appearances: `txAddresses[i]`, the addresses transaction i's frames
   * name, less those its Appearances hold; stages the block's FrameAddresses row.
   */
  post(
    ops: GroupBatch,
    b: AppearanceBlock & { hash: Uint8Array },
    txAddresses: readonly (readonly Uint8Array[])[],
    alloc: (n: number) => Uint8Array,
  ): void {
    const posted = new Map<string, Uint8Array>();
    for (let i = 0; i < b.transactions.length; i++) {
      const own = new Set<string>();
      for (const a of touched(b, i)) own.add(keyOf(a));
      const id = appearanceId(b.number, i);
      for (const a of txAddresses[i] ?? []) {
        const k = keyOf(a);
        if (a.length !== ADDRESS || own.has(k)) continue;
        own.add(k);
        this.values.post(APPEARANCE_KIND, a, id);
        posted.set(k, a);
      }
    }
    tables.frameAddresses.stage(ops, b.number, concatBytes(b.hash, ...posted.values()), alloc);
  }

  /**
   * Cuts the lists the blocks `numbers` (all above `ancestor`, being rewound) posted to, at the
   * first of them, and deletes their FrameAddresses rows.
   */
  async cut(db: Db, ops: GroupBatch, ancestor: bigint, numbers: readonly bigint[], flush: number): Promise<void> {
    const addresses = new Map<string, Uint8Array>();
    for (const n of numbers) {
      const row = await tables.frameAddresses.get(db, n);
      ops.del(tables.frameAddresses.key(n));
      if (row === undefined) continue;
      for (let at = 32; at + ADDRESS <= row.length; at += ADDRESS) {
        const a = row.slice(at, at + ADDRESS);
        addresses.set(keyOf(a), a);
      }
    }
    const cut = appearanceId(ancestor + 1n, 0);
    for (const a of addresses.values()) await this.values.cut(db, ops, APPEARANCE_KIND, a, cut, flush);
  }

  /** Stages the posted lists (and Meta.frameAppearancesFrom, the first time) into the group. */
  async stage(db: Db, ops: GroupBatch, flush: number, alloc: (n: number) => Uint8Array): Promise<void> {
    await this.values.stage(db, ops, flush, alloc);
    if (!this.from.stored) tables.meta.put(ops, MetaKey.FrameAppearancesFrom, u64Codec.encode(this.from.value));
  }

  /** The group staged last has landed. */
  landed(): void {
    this.from.stored = true;
  }

  /** The group staged last failed: forget what it posted. */
  reset(): void {
    this.values.reset();
  }
}
