// Opening the one LevelDB of a datadir. classic-level takes an exclusive lock; a second process
// gets DatadirInUseError (one line naming the datadir) instead of a LevelDB stack trace.
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Level } from 'level';

export type Db = Level<Uint8Array, Uint8Array>;

export class DatadirInUseError extends Error {
  constructor(readonly datadir: string) {
    super(`datadir ${datadir} is in use by another process`);
    this.name = 'DatadirInUseError';
  }
}

export class DatadirEmptyError extends Error {
  constructor(readonly datadir: string) {
    super(`datadir ${datadir} holds no imported chain (run node-cli sync first)`);
    this.name = 'DatadirEmptyError';
  }
}

/** Walks the error's causes as plain objects: under jest's module sandbox, the native binding's errors are not `instanceof Error`. */
function isLockError(err: unknown): boolean {
  for (let e: unknown = err; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (code === 'LEVEL_LOCKED') return true;
    if (
      typeof message === 'string' &&
      /lock/i.test(message) &&
      /(held|unavailable|resource temporarily)/i.test(message)
    )
      return true;
  }
  return false;
}

export interface OpenDbOptions {
  create: boolean;
  /**
   * Let worker threads of this process open the same datadir (classic-level's
   * `multithreading`); every opener in the process must pass it. Other processes are still
   * locked out by LevelDB's file lock.
   */
  shared?: boolean | undefined;
  /** The writer's open: LevelDB tuned for large batches (see BULK_LOAD). */
  bulkLoad?: boolean;
}

/**
 * LevelDB options of the writer (imports and the getLogs bench build). A group batch is tens of
 * MB, far above LevelDB's default 4 MiB write buffer, so every batch became its own level-0 file;
 * with fast writes the level-0 count hit LevelDB's stop trigger (12 files) and writes waited for
 * compaction. A 64 MiB buffer halves the level-0 files and cut compaction output by ~30% on the
 * standard getLogs build. It costs up to two memtables (128 MiB) in the writing process; the
 * on-disk format and the readers' options are unchanged.
 */
const BULK_LOAD = { writeBufferSize: 64 * 2 ** 20 };

/** LevelDB's own default, and the floor: what a process with a low descriptor limit keeps. */
const MIN_OPEN_TABLES = 1000;
/** Descriptors left to everything else in the process (sockets, log files, the other opens). */
const FD_RESERVE = 1024;

/** The soft RLIMIT_NOFILE of this process (Linux: /proc/self/limits), or undefined. */
export function openFileLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!line) return undefined;
    return line[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(line[1]);
  } catch {
    return undefined;
  }
}

/**
 * How many table files LevelDB may keep open (its table cache). Each open table holds its index
 * and bloom-filter blocks in memory; a table that has to be reopened costs a file open and reads
 * and parses both again before the one block wanted. LevelDB's default of 1,000 tables covers a
 * ~2 GB datadir (2 MiB tables); past that, random reads (a getLogs answer reads a log row and a
 * block context per result) reopened tables all the time: the rare-address query of the 10x
 * getLogs chain (4,800 tables) took 16-19 ms at 1,000 and 5.5-9 ms with every table open. So
 * every table may stay open, up to the descriptor limit less a reserve (Node raises the soft
 * limit to the hard one at start). Memory grows with the tables actually read: ~20-25 KB of
 * index and filter per 2 MiB table, about 1% of the datadir.
 */
export function maxOpenTables(limit: number | undefined): number {
  if (limit === undefined) return MIN_OPEN_TABLES;
  return Math.max(MIN_OPEN_TABLES, Math.min(limit - FD_RESERVE, 1_000_000));
}

export async function openDb(datadir: string, opts: OpenDbOptions): Promise<Db> {
  const dir = resolve(datadir);
  if (opts.create) await mkdir(dir, { recursive: true });
  const db: Db = new Level<Uint8Array, Uint8Array>(resolve(dir, 'chain'), {
    keyEncoding: 'view',
    valueEncoding: 'view',
    createIfMissing: opts.create,
    multithreading: opts.shared === true,
    maxOpenFiles: maxOpenTables(openFileLimit()),
    ...(opts.bulkLoad === true ? BULK_LOAD : {}),
  });
  try {
    await db.open();
  } catch (err) {
    if (isLockError(err)) throw new DatadirInUseError(datadir);
    if (!opts.create) throw new DatadirEmptyError(datadir);
    throw err;
  }
  return db;
}
