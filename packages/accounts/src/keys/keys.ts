// API keys over a KeyStore (embedded: <datadir>/keys.json; Redis: one JSON value per key). Only
// sha256(key) is stored; the key itself is shown once at creation and never written or logged
// anywhere. The server keeps a live in-memory view (KeyRegistry), refreshed within a second of a
// change made by any process.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PlanName } from '../plans.js';
import { FileKeyStore } from './file-store.js';
import { validateKeyRecord } from './record.js';
import type { KeyRecord, KeyStore } from './record.js';

/**
 * Whether a key may call `network` (KeyRecord.networks; no list on the key: every network). A call
 * to another network is refused with 403 / -32002 and costs nothing.
 */
export function keyAllowsNetwork(rec: KeyRecord, network: string): boolean {
  return rec.networks === undefined || rec.networks.includes(network);
}

/** Characters of the plaintext key kept for display (of 32 hex: 104 random bits stay secret). */
export const KEY_PREFIX_LENGTH = 6;

/** The ledger identity of a key (see KeyRecord.chargeTo): rotation keeps the balance. */
export function chargeHash(rec: KeyRecord): string {
  return rec.chargeTo ?? rec.hash;
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
  if (decoded.indexOf(':') !== 0) return 'wrong'; // the user name must be empty
  const given = Buffer.from(hashKey(decoded.slice(1)), 'hex');
  const want = Buffer.from(rec.secretHash, 'hex');
  return given.length === want.length && timingSafeEqual(given, want) ? 'ok' : 'wrong';
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Keys are 32 lowercase hex digits (128 random bits), like Infura project ids. */
export function generateKey(): string {
  return randomBytes(16).toString('hex');
}

export interface CreateKeyOptions {
  plan: PlanName;
  dailyCredits?: number;
  creditsPerSecond?: number;
  label?: string;
  /** Limit the key to these networks (absent: every network). */
  networks?: string[];
}

/** A KeyStore, or a datadir (its embedded keys.json). */
export type KeysAt = KeyStore | string;
const storeOf = (at: KeysAt): KeyStore => (typeof at === 'string' ? new FileKeyStore(at) : at);

/** A fresh plaintext key and its record: id, hash and prefix derived from it, `name` when given. */
export function newKey(plan: PlanName, createdAt: Date, name?: string): { key: string; record: KeyRecord } {
  const key = generateKey();
  const hash = hashKey(key);
  const record: KeyRecord = {
    id: hash.slice(0, 12),
    hash,
    plan,
    createdAt: createdAt.toISOString(),
    ...(name !== undefined ? { name } : {}),
    prefix: key.slice(0, KEY_PREFIX_LENGTH),
  };
  return { key, record };
}

/** Creates a key; returns the plaintext key (to print once) and its stored record. */
export async function createKey(at: KeysAt, opts: CreateKeyOptions): Promise<{ key: string; record: KeyRecord }> {
  const store = storeOf(at);
  const { key, record } = newKey(opts.plan, new Date());
  if (opts.dailyCredits !== undefined) record.dailyCredits = opts.dailyCredits;
  if (opts.creditsPerSecond !== undefined) record.creditsPerSecond = opts.creditsPerSecond;
  if (opts.label !== undefined) record.label = opts.label;
  if (opts.networks !== undefined) record.networks = opts.networks;
  const stored = validateKeyRecord(record, 'key record'); // networks: names checked, duplicates dropped
  await store.put(stored);
  return { key, record: stored };
}

/** Finds a key by its plaintext or by its public id (as printed by `keys list`). */
export function findKey(keys: KeyRecord[], keyOrId: string): KeyRecord | undefined {
  const h = hashKey(keyOrId);
  return keys.find((k) => k.hash === h) ?? keys.find((k) => k.id === keyOrId);
}

/** Marks a key revoked; returns the record, or undefined when no such key exists. */
export async function revokeKey(at: KeysAt, keyOrId: string): Promise<KeyRecord | undefined> {
  const store = storeOf(at);
  const rec = findKey(await store.list(), keyOrId);
  if (!rec) return undefined;
  if (rec.revokedAt === undefined) {
    rec.revokedAt = new Date().toISOString();
    await store.put(rec);
  }
  return rec;
}

/**
 * The server's live view of a KeyStore, reloaded on every change the store reports (within a
 * second). Lookups are synchronous (the transport authenticates before reading the body); lookups
 * by plaintext key go through a small cache of key -> hash so the hot path hashes each distinct
 * key once.
 */
export class KeyRegistry {
  private byHash = new Map<string, KeyRecord>();
  private hashCache = new Map<string, string>();
  private stopWatch: (() => void) | undefined;
  private loading: Promise<void> | undefined;
  private again = false;
  private listeners: ((changed: KeyRecord[]) => void)[] = [];

  private constructor(
    private readonly store: KeyStore,
    private readonly onError: (message: string) => void,
  ) {}

  /** Loads every key once, then follows changes. */
  static async open(store: KeyStore, onError: (message: string) => void = () => {}): Promise<KeyRegistry> {
    const r = new KeyRegistry(store, onError);
    await r.reload();
    r.stopWatch = store.watch(() => void r.reload());
    return r;
  }

  /** Called with the records that changed on each reload (e.g. to close a revoked key's sockets). */
  onChange(listener: (changed: KeyRecord[]) => void): void {
    this.listeners.push(listener);
  }

  stop(): void {
    this.stopWatch?.();
    this.stopWatch = undefined;
  }

  /** Re-reads every key; on a failed read the previous key set stays in force. */
  reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.again = false;
        try {
          const keys = await this.store.list();
          const map = new Map<string, KeyRecord>();
          const changed: KeyRecord[] = [];
          for (const k of keys) {
            map.set(k.hash, k);
            const old = this.byHash.get(k.hash);
            if (old !== undefined && JSON.stringify(old) !== JSON.stringify(k)) changed.push(k);
          }
          this.byHash = map;
          if (changed.length > 0) for (const l of this.listeners) l(changed);
        } catch (err) {
          this.onError(`keys not reloaded: ${(err as Error).message}`);
        }
      } while (this.again);
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
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
