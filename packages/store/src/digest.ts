// A digest of every key and value of a datadir (in key order): two stores with equal digests
// hold exactly the same data. Used by the crash-safety tests.
import { createHash } from 'node:crypto';
import { openDb } from './db.js';
import { Prefix } from './schema/index.js';

/**
 * The tables only an import that executes writes (its recorded call frames and state changes): a
 * replica of the same chain holds every other row equal, and none of these.
 */
export const EXECUTED_ONLY: readonly number[] = [
  Prefix.TxFrames,
  Prefix.FrameBlooms,
  Prefix.FrameAppearances,
  Prefix.FrameAddresses,
  Prefix.TxStateDiffs,
];

/**
 * With `prefixes`, only the rows of those tables (schema.ts Prefix) are digested; the rows of the
 * tables in `except` never are.
 */
export async function digestDatadir(
  datadir: string,
  prefixes?: readonly number[],
  except: readonly number[] = [],
): Promise<{ digest: string; entries: number }> {
  const db = await openDb(datadir, { create: false });
  try {
    const h = createHash('sha256');
    let entries = 0;
    const len = Buffer.alloc(4);
    for await (const [k, v] of db.iterator()) {
      if (prefixes !== undefined && !prefixes.includes(k[0] as number)) continue;
      if (except.includes(k[0] as number)) continue;
      len.writeUInt32BE(k.length);
      h.update(len).update(k);
      len.writeUInt32BE(v.length);
      h.update(len).update(v);
      entries++;
    }
    return { digest: h.digest('hex'), entries };
  } finally {
    await db.close();
  }
}
