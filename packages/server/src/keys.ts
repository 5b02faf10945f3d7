// API keys live in `<datadir>/keys.json`, outside LevelDB (which the running server locks), so
// the `keys` CLI works with or without a server. Only sha256(key) is stored; the key itself is
// shown once at creation and never written or logged anywhere. Writes are atomic (temp file +
// rename); the server reloads the file within a second (fs.watch on the directory plus a poll).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, watch, writeSync, mkdirSync } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { isPlanName, PLAN_NAMES } from './config.js';
import type { PlanName } from './config.js';
import { AllowlistError, validateAllowlists } from './allowlist.js';
import type { Allowlists } from './allowlist.js';

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
  // Optional fields of the dashboard (issue 18); absent on keys made before it.
  /** Display name; older keys show `label`. */
  name?: string;
  /** The first KEY_PREFIX_LENGTH characters of the key itself (not of its hash), to recognise it. */
  prefix?: string;
  /** Networks the key may use (enforced by the networks routing); absent = all. */
  networks?: string[];
  /** Per-key limits below the plan's (Infura "Key Credit Limits"): 429 with event -33400 / -33300. */
  limits?: KeyLimits;
  /** Infura-style allowlists; see allowlist.ts. */
  allowlists?: Allowlists;
  /** sha256 of the key's API secret (HTTP basic auth password, empty user name). */
  secretHash?: string;
  /** Refuse every request that does not carry the secret (401). */
  secretRequired?: boolean;
  /**
   * The 64-hex identity the credit ledger charges: the hash of the key as first created, kept
   * across rotations so that rotating a key does not refill its daily balance. Absent = `hash`.
   */
  chargeTo?: string;
  rotatedAt?: string;
}

export interface KeyLimits {
  /** Credits per UTC day for this key (0 or absent: the plan's). */
  creditsPerDay?: number;
  /** Credits per second for this key (0 or absent: no per-key throughput cap). */
  creditsPerSecond?: number;
}

/** Characters of the plaintext key kept for display (of 32 hex: 104 random bits stay secret). */
export const KEY_PREFIX_LENGTH = 6;

/** The ledger identity of a key (see KeyRecord.chargeTo). */
export function chargeHash(rec: KeyRecord): string {
  return rec.chargeTo ?? rec.hash;
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
  if (typeof o['name'] === 'string') rec.name = o['name'];
  if (typeof o['prefix'] === 'string' && /^[0-9a-f]{1,16}$/.test(o['prefix'])) rec.prefix = o['prefix'];
  if (o['networks'] !== undefined) {
    if (!Array.isArray(o['networks']) || !o['networks'].every((n) => typeof n === 'string')) throw new KeyFileError(`${where}.networks: expected an array of network names`);
    rec.networks = o['networks'] as string[];
  }
  if (o['limits'] !== undefined) {
    const l = o['limits'] as Record<string, unknown> | null;
    if (typeof l !== 'object' || l === null) throw new KeyFileError(`${where}.limits: expected an object`);
    const limits: KeyLimits = {};
    for (const f of ['creditsPerDay', 'creditsPerSecond'] as const) {
      const v = l[f];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new KeyFileError(`${where}.limits.${f}: expected a non-negative integer`);
      limits[f] = v;
    }
    rec.limits = limits;
  }
  if (o['allowlists'] !== undefined) {
    try {
      rec.allowlists = validateAllowlists(o['allowlists']);
    } catch (err) {
      if (err instanceof AllowlistError) throw new KeyFileError(`${where}.allowlists: ${err.message}`);
      throw err;
    }
  }
  if (typeof o['secretHash'] === 'string' && /^[0-9a-f]{64}$/.test(o['secretHash'])) rec.secretHash = o['secretHash'];
  if (o['secretRequired'] === true) rec.secretRequired = true;
  if (typeof o['chargeTo'] === 'string' && /^[0-9a-f]{64}$/.test(o['chargeTo'])) rec.chargeTo = o['chargeTo'];
  if (typeof o['rotatedAt'] === 'string') rec.rotatedAt = o['rotatedAt'];
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
}

/** Creates a key; returns the plaintext key (to print once) and its stored record. */
export function createKey(datadir: string, opts: CreateKeyOptions): { key: string; record: KeyRecord } {
  const key = generateKey();
  const hash = hashKey(key);
  const record: KeyRecord = { id: hash.slice(0, 12), hash, plan: opts.plan, createdAt: new Date().toISOString(), prefix: key.slice(0, KEY_PREFIX_LENGTH) };
  if (opts.dailyCredits !== undefined) record.dailyCredits = opts.dailyCredits;
  if (opts.label !== undefined) record.label = opts.label;
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

/** A key's API secret: 32 hex digits (128 random bits), stored only as sha256. */
export function generateSecret(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Checks the request's Authorization header against the key's secret (Infura: HTTP basic auth,
 * empty user name, the secret as password). 'ok' also when the key has no secret, or has one
 * that is not required and the request carries none; a secret sent but wrong is always refused.
 */
export function checkSecret(rec: KeyRecord, authorization: string): 'ok' | 'missing' | 'wrong' {
  if (rec.secretHash === undefined) return 'ok';
  if (authorization === '') return rec.secretRequired === true ? 'missing' : 'ok';
  const m = /^Basic ([A-Za-z0-9+/=]{1,512})$/i.exec(authorization.trim());
  if (!m) return 'wrong';
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon !== 0) return 'wrong'; // the user name must be empty
  const given = Buffer.from(hashKey(decoded.slice(1)), 'hex');
  const want = Buffer.from(rec.secretHash, 'hex');
  return given.length === want.length && timingSafeEqual(given, want) ? 'ok' : 'wrong';
}
