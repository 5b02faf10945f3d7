// The embedded engine's keys: <datadir>/keys.json, one JSON document holding every record,
// replaced atomically (mode 0600); outside LevelDB so the `keys` CLI can change it while a server runs.
import { mkdirSync, statSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile, writeFileAtomic } from '@chainnode/core';
import { KeyFileError, validateKeyRecord } from './record.js';
import type { KeyRecord, KeyStore } from './record.js';

export const KEYS_FILE = 'keys.json';

interface KeysFile {
  version: 1;
  keys: KeyRecord[];
}

export function keysPath(datadir: string): string {
  return join(datadir, KEYS_FILE);
}

/** Reads the key file; a missing file is an empty key set. */
export function readKeys(datadir: string): KeyRecord[] {
  const parsed = readJsonFile(keysPath(datadir), (m) => new KeyFileError(m));
  if (parsed === undefined) return [];
  const keys = (parsed as Partial<KeysFile> | null)?.keys;
  if (!Array.isArray(keys)) throw new KeyFileError(`${keysPath(datadir)}: expected {"version":1,"keys":[...]}`);
  return keys.map((k, i) => validateKeyRecord(k, `keys.json: keys[${i}]`));
}

/** Atomic replace: write a temp file, fsync, rename over the old one. */
export function writeKeys(datadir: string, keys: KeyRecord[]): void {
  mkdirSync(datadir, { recursive: true });
  const path = keysPath(datadir);
  const body: KeysFile = { version: 1, keys };
  writeFileAtomic(path, `${JSON.stringify(body, null, 2)}\n`);
}

/** Keys in `<datadir>/keys.json` (written atomically, mode 0600); watched with fs.watch plus a 500 ms poll. */
export class FileKeyStore implements KeyStore {
  constructor(private readonly datadir: string) {}

  async list(): Promise<KeyRecord[]> {
    return readKeys(this.datadir);
  }

  async get(hash: string): Promise<KeyRecord | undefined> {
    return readKeys(this.datadir).find((k) => k.hash === hash);
  }

  async put(record: KeyRecord): Promise<void> {
    const keys = readKeys(this.datadir);
    const i = keys.findIndex((k) => k.hash === record.hash);
    if (i >= 0) keys[i] = record;
    else keys.push(record);
    writeKeys(this.datadir, keys);
  }

  private stamp(): string {
    try {
      const st = statSync(keysPath(this.datadir));
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'missing';
    }
  }

  watch(onChange: () => void): () => void {
    let last = this.stamp();
    const check = (): void => {
      const now = this.stamp();
      if (now !== last) {
        last = now;
        onChange();
      }
    };
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(this.datadir, { persistent: false }, (_event, name) => {
        if (name === null || name === KEYS_FILE) check();
      });
      watcher.on('error', () => {});
    } catch {
      // fs.watch is unavailable on some file systems; the poll still runs.
    }
    const timer = setInterval(check, 500);
    timer.unref();
    return () => {
      watcher?.close();
      clearInterval(timer);
    };
  }

  async close(): Promise<void> {}
}
