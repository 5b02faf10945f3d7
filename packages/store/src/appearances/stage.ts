// The address-appearance index at import (schema.ts, Appearances): for each transaction of a
// block, the addresses it touches that the block and its receipts show (the sender, the recipient
// or the contract a creation deploys, the emitters of its logs), posted under the transaction's
// appearance id to the writer's posting lists, and, for a rewind, the addresses whose lists the
// removed blocks reach.
import type { Db } from '../db.js';
import { APPEARANCE_KIND, appearanceId, readBodySync, tables } from '../schema/index.js';
import type { ValueTable } from '../writer/value-table.js';
import { txTarget } from './tx-fields.js';

/** What the index reads of a block: its transactions' encodings and senders, their logs' emitters. */
export interface AppearanceBlock {
  number: bigint;
  transactions: readonly Uint8Array[];
  senders: readonly Uint8Array[];
  logs: readonly (readonly { address: Uint8Array }[])[];
}

/** The addresses transaction `i` of `b` touches (repeats possible). */
export function* touched(b: AppearanceBlock, i: number): Generator<Uint8Array> {
  const sender = b.senders[i];
  const raw = b.transactions[i];
  if (sender !== undefined) yield sender;
  if (raw !== undefined && sender !== undefined) {
    const target = txTarget(raw, sender);
    if (target !== undefined) yield target;
  }
  for (const l of b.logs[i] ?? []) yield l.address;
}

/** Posts every appearance of block `b`, in transaction order (ids increase). */
export function postAppearances(values: ValueTable, b: AppearanceBlock): void {
  for (let i = 0; i < b.transactions.length; i++) {
    const id = appearanceId(b.number, i);
    for (const address of touched(b, i)) values.post(APPEARANCE_KIND, address, id);
  }
}

/** The distinct addresses the blocks `removed` touched (read back from their rows). */
export async function removedAppearances(
  db: Db,
  removed: readonly {
    number: bigint;
    hash: Uint8Array;
    logs: readonly { address: Uint8Array; transactionIndex: number }[];
  }[],
): Promise<Uint8Array[]> {
  const out = new Map<string, Uint8Array>();
  for (const r of removed) {
    const body = readBodySync(db, r.hash);
    const senders = tables.senders.getSync(db, r.hash);
    const logs: { address: Uint8Array }[][] = [];
    for (const l of r.logs) (logs[l.transactionIndex] ??= []).push(l);
    const b: AppearanceBlock = {
      number: r.number,
      transactions: body?.transactions ?? [],
      senders: senders ?? [],
      logs,
    };
    for (let i = 0; i < b.transactions.length; i++)
      for (const a of touched(b, i)) out.set(Buffer.from(a).toString('hex'), a);
    for (const l of r.logs) out.set(Buffer.from(l.address).toString('hex'), l.address);
  }
  return [...out.values()];
}
