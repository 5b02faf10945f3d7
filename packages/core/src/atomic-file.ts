// Files replaced whole, never seen half-written: the content goes to a temporary file beside the
// target, is fsynced, and is renamed over it (atomic within one file system), and the directory
// is synced so the rename itself survives a crash. Keys, admin token, usage days and the fixture
// generator's output are all written this way.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** A fresh temporary path beside `path` (same directory, so a rename over `path` is atomic). */
export function tempPathFor(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}

/** Makes a rename in `dir` durable (best effort: not every file system lets a directory be synced). */
export function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // the rename itself is atomic either way
  }
}

/** Replaces `path` with `data` atomically and durably; the file gets `mode` (default 0600). */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): void {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const tmp = tempPathFor(path);
  try {
    const fd = openSync(tmp, 'w', mode);
    try {
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  syncDir(dirname(path));
}

/**
 * The JSON value in `path` (a file such as writeFileAtomic writes), or undefined when there is no
 * such file; text that is not JSON throws `invalid`'s error.
 */
export function readJsonFile(path: string, invalid: (message: string) => Error): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw invalid(`${path} is not valid JSON`);
  }
}
