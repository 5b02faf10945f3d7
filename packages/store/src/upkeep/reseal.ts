// Converting a datadir's sealed log segments to the layout sealed now (compressed, the sealed
// blocks' ready JSON rows deleted): what `db convert` runs for the logs. The datadir must not be
// in use (LevelDB's lock).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatadirEmptyError, openDb } from '../db.js';
import { resealLogSegments } from '../logs/index.js';
import type { Reseal } from '../logs/index.js';

/** Seals `datadir`'s log segments again, compressed (see resealLogSegments). */
export async function resealDatadirLogs(datadir: string): Promise<Reseal> {
  if (!existsSync(join(datadir, 'chain'))) throw new DatadirEmptyError(datadir);
  const db = await openDb(datadir, { create: false });
  try {
    return await resealLogSegments(db, datadir);
  } finally {
    await db.close();
  }
}
