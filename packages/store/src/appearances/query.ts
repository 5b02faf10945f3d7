// Reads of the address-appearance index (schema.ts, Appearances): the transactions an address
// touched, newest first below a block or oldest first above one, a page at a time. A page holds
// at least `count` transactions when there are that many, and always every match of its last
// block (Erigon's searches drain the block they stop in).
import {
  APPEARANCE_KIND,
  APPEARANCE_TX_BITS,
  MetaKey,
  decodePostings,
  logIndexKeyLength,
  Prefix,
  tables,
  u64Codec,
  writeLogIndexKey,
} from '../schema/index.js';
import type { AppearancePage, AppearanceQuery } from '@chainnode/core';
import type { KvRead } from '../schema/index.js';

const TX_SPAN = 2 ** APPEARANCE_TX_BITS;

function key(address: Uint8Array, id: number | undefined): Uint8Array {
  const out = new Uint8Array(logIndexKeyLength(address.length));
  return writeLogIndexKey(out, APPEARANCE_KIND, address, id, Prefix.Appearances);
}

/** The first block the index holds complete (Meta.appearancesFrom; undefined: no block written with it yet). */
export async function appearancesFrom(db: KvRead): Promise<bigint | undefined> {
  const v = await tables.meta.get(db, MetaKey.AppearancesFrom);
  return v === undefined ? undefined : u64Codec.decode(v);
}

/** One page of `q`'s appearances. */
export async function queryAppearances(db: KvRead, q: AppearanceQuery): Promise<AppearancePage> {
  const before = q.direction === 'before';
  // Ids below `below` (before), or from `from` on (after).
  const below = before && q.block !== undefined ? Number(q.block) * TX_SPAN : Number.POSITIVE_INFINITY;
  const from = !before && q.block !== undefined ? (Number(q.block) + 1) * TX_SPAN : 0;
  const last = key(q.address, undefined);
  let range: { gte: Uint8Array; lte: Uint8Array; reverse: boolean };
  if (before) {
    // The chunk holding the greatest id below `below` is the first whose last id is >= below - 1.
    let top = last;
    if (Number.isFinite(below)) {
      const seek = db.iterator({ gte: key(q.address, below - 1), lte: last, limit: 1 });
      try {
        for await (const [k] of seek) top = k.slice();
      } finally {
        await seek.close();
      }
    }
    range = { gte: key(q.address, 0), lte: top, reverse: true };
  } else range = { gte: key(q.address, from), lte: last, reverse: false };
  const positions: AppearancePage['positions'] = [];
  let stopBlock: number | undefined;
  const it = db.iterator(range);
  try {
    for await (const [, v] of it) {
      const ids = decodePostings(v);
      if (before) ids.reverse();
      for (const id of ids) {
        if (before ? id >= below : id < from) continue;
        const number = Math.floor(id / TX_SPAN);
        if (stopBlock !== undefined && number !== stopBlock) return { positions, more: true };
        positions.push({ number: BigInt(number), index: id % TX_SPAN });
        if (positions.length >= q.count) stopBlock = number;
      }
    }
  } finally {
    await it.close();
  }
  return { positions, more: false };
}
