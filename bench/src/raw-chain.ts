// Reads of a datadir's chain LevelDB without the store (bench scripts that walk its raw rows): the
// canonical head and a canonical block's state root, by the key layout of
// packages/store/src/schema/schema.ts (Canonical: number(8) -> hash; Headers: hash -> header RLP).
import { RLP } from '@ethereumjs/rlp';
import { Prefix } from '@chainnode/store';
import type { Level } from 'level';

type Chain = Level<Uint8Array, Uint8Array>;

/** The highest canonical block number (0 for an empty table). */
export async function canonicalHead(db: Chain): Promise<number> {
  let head = 0;
  for await (const k of db.keys({
    gt: Uint8Array.of(Prefix.Canonical),
    lt: Uint8Array.of(Prefix.Canonical + 1),
    reverse: true,
    limit: 1,
  }))
    head = Number(Buffer.from(k.subarray(1)).readBigUInt64BE());
  return head;
}

/** The state root in the header of canonical block `n`. */
export async function canonicalStateRoot(db: Chain, n: number): Promise<Uint8Array> {
  const k = new Uint8Array(9);
  k[0] = Prefix.Canonical;
  new DataView(k.buffer).setBigUint64(1, BigInt(n));
  const hash = await db.get(k);
  if (hash === undefined) throw new Error(`no canonical block ${n}`);
  const header = await db.get(Uint8Array.of(Prefix.Headers, ...hash));
  if (header === undefined) throw new Error(`no header of block ${n}`);
  return (RLP.decode(header) as Uint8Array[])[3] as Uint8Array;
}
