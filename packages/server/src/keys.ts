// API keys live in `<datadir>/keys.json`, outside LevelDB (which the running server locks), so
// the `keys` CLI works with or without a server. Only sha256(key) is stored; the key itself is
// shown once at creation and never written or logged anywhere. Writes are atomic (temp file +
// rename); the server reloads the file within a second (fs.watch on the directory plus a poll).
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, watch, writeSync, mkdirSync } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { isPlanName, PLAN_NAMES } from './config.js';
import type { PlanName } from './config.js';
import { NETWORK_NAME_RE } from './network.js';

export const KEYS_FILE = 'keys.json';

export interface KeyRecord {
  /** Short public id: the first 12 hex digits of the hash (safe to show and log). */
  id: string;
  /** sha256 of the key, hex. */
  hash: string;
  plan: PlanName;
  /** Per-key override of the plan's daily balance. */
  dailyCredits?: number;
  label?: string;
  createdAt: string;
  revokedAt?: string;
  /**
   * The networks this key may call (names as in `serve --network <name>=…`); absent: every
   * network. A call to another network is refused with 403 / -32002 and costs nothing.
   */
  networks?: string[];
}

/** At most this many network names on one key. */
export const MAX_KEY_NETWORKS = 32;

/** Whether a key may call `network` (no list on the key: every network). */
export function keyAllowsNetwork(rec: KeyRecord, network: string): boolean {
  return rec.networks === undefined || rec.networks.includes(network);
}

interface KeysFile {
  version: 1;
  keys: KeyRecord[];
}

export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFileError';
  }
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Keys are 32 lowercase hex digits (128 random bits), like Infura project ids. */
export function generateKey(): string {
  return randomBytes(16).toString('hex');
}

export function keysPath(datadir: string): string {
  return join(datadir, KEYS_FILE);
}

function validateRecord(r: unknown, i: number): KeyRecord {
  const where = `keys.json: keys[${i}]`;
  if (typeof r !== 'object' || r === null) throw new KeyFileError(`${where}: expected an object`);
  const o = r as Record<string, unknown>;
  if (typeof o['hash'] !== 'string' || !/^[0-9a-f]{64}$/.test(o['hash'])) throw new KeyFileError(`${where}.hash: expected 64 hex digits`);
  if (typeof o['plan'] !== 'string' || !isPlanName(o['plan'])) throw new KeyFileError(`${where}.plan: expected one of ${PLAN_NAMES.join(', ')}`);
  if (o['dailyCredits'] !== undefined && (typeof o['dailyCredits'] !== 'number' || !Number.isSafeInteger(o['dailyCredits']) || o['dailyCredits'] < 0)) {
    throw new KeyFileError(`${where}.dailyCredits: expected a non-negative integer`);
  }
  const rec: KeyRecord = {
    id: typeof o['id'] === 'string' ? o['id'] : o['hash'].slice(0, 12),
    hash: o['hash'],
    plan: o['plan'],
    createdAt: typeof o['createdAt'] === 'string' ? o['createdAt'] : '',
  };
  if (typeof o['dailyCredits'] === 'number') rec.dailyCredits = o['dailyCredits'];
  if (typeof o['label'] === 'string') rec.label = o['label'];
  if (typeof o['revokedAt'] === 'string') rec.revokedAt = o['revokedAt'];
  if (o['networks'] !== undefined) {
    const n = o['networks'];
    if (!Array.isArray(n) || n.length > MAX_KEY_NETWORKS || !n.every((x) => typeof x === 'string' && NETWORK_NAME_RE.test(x))) {
      throw new KeyFileError(`${where}.networks: expected at most ${MAX_KEY_NETWORKS} network names (lowercase DNS labels)`);
    }
    rec.networks = [...new Set(n as string[])];
  }
  return rec;
}

/** Reads the key file; a missing file is an empty key set. */
export function readKeys(datadir: string): KeyRecord[] {
  let text: string;
  try {
    text = readFileSync(keysPath(datadir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new KeyFileError(`${keysPath(datadir)} is not valid JSON`);
  }
  const keys = (parsed as Partial<KeysFile> | null)?.keys;
  if (!Array.isArray(keys)) throw new KeyFileError(`${keysPath(datadir)}: expected {"version":1,"keys":[...]}`);
  return keys.map(validateRecord);
}

/** Atomic replace: write a temp file, fsync, rename over the old one. */
export function writeKeys(datadir: string, keys: KeyRecord[]): void {
  mkdirSync(datadir, { recursive: true });
  const path = keysPath(datadir);
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const body: KeysFile = { version: 1, keys };
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(body, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export interface CreateKeyOptions {
  plan: PlanName;
  dailyCredits?: number;
  label?: string;
  /** Limit the key to these networks (absent: every network). */
  networks?: string[];
}

/** Creates a key; returns the plaintext key (to print once) and its stored record. */
export function createKey(datadir: string, opts: CreateKeyOptions): { key: string; record: KeyRecord } {
  const key = generateKey();
  const hash = hashKey(key);
  const record: KeyRecord = { id: hash.slice(0, 12), hash, plan: opts.plan, createdAt: new Date().toISOString() };
  if (opts.dailyCredits !== undefined) record.dailyCredits = opts.dailyCredits;
  if (opts.label !== undefined) record.label = opts.label;
  if (opts.networks !== undefined) record.networks = validateRecord({ ...record, networks: opts.networks }, 0).networks as string[];
  const keys = readKeys(datadir);
  keys.push(record);
  writeKeys(datadir, keys);
  return { key, record };
}

/** Finds a key by its plaintext or by its public id (as printed by `keys list`). */
export function findKey(keys: KeyRecord[], keyOrId: string): KeyRecord | undefined {
  const h = hashKey(keyOrId);
  return keys.find((k) => k.hash === h) ?? keys.find((k) => k.id === keyOrId);
}

/** Marks a key revoked; returns the record, or undefined when no such key exists. */
export function revokeKey(datadir: string, keyOrId: string): KeyRecord | undefined {
  const keys = readKeys(datadir);
  const rec = findKey(keys, keyOrId);
  if (!rec) return undefined;
  if (rec.revokedAt === undefined) {
    rec.revokedAt = new Date().toISOString();
    writeKeys(datadir, keys);
  }
  return rec;
}

/**
 * The server's live view of keys.json, reloaded within a second of a change. Lookups by
 * plaintext key go through a small cache of key -> hash so the hot path hashes each distinct
 * key once.
 */
export class KeyRegistry {
  private byHash = new Map<string, KeyRecord>();
  private hashCache = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastStamp = '';

  constructor(
    private readonly datadir: string,
    private readonly onError: (message: string) => void = () => {},
  ) {
    this.reload();
  }

  /** Starts watching keys.json (directory watch for renames, plus a 500 ms poll fallback). */
  watch(): void {
    try {
      this.watcher = watch(this.datadir, { persistent: false }, (_event, name) => {
        if (name === null || name === KEYS_FILE) this.reloadIfChanged();
      });
      this.watcher.on('error', () => {});
    } catch {
      // fs.watch is unavailable on some file systems; the poll still runs.
    }
    this.timer = setInterval(() => this.reloadIfChanged(), 500);
    this.timer.unref();
  }

  stop(): void {
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
  }

  private stamp(): string {
    try {
      const st = statSync(keysPath(this.datadir));
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return 'missing';
    }
  }

  private reloadIfChanged(): void {
    if (this.stamp() !== this.lastStamp) this.reload();
  }

  /** Re-reads keys.json; on a broken file the previous key set stays in force. */
  reload(): void {
    const stamp = this.stamp();
    try {
      const keys = readKeys(this.datadir);
      const map = new Map<string, KeyRecord>();
      for (const k of keys) map.set(k.hash, k);
      this.byHash = map;
      this.lastStamp = stamp;
    } catch (err) {
      this.onError(`keys.json not reloaded: ${(err as Error).message}`);
    }
  }

  /** The record of a plaintext key (revoked ones included), or undefined. */
  lookup(key: string): KeyRecord | undefined {
    let h = this.hashCache.get(key);
    if (h === undefined) {
      h = hashKey(key);
      if (this.hashCache.size > 10_000) this.hashCache.clear();
      this.hashCache.set(key, h);
    }
    return this.byHash.get(h);
  }

  byKeyHash(hash: string): KeyRecord | undefined {
    return this.byHash.get(hash);
  }
}
