// A key record: its type, the key-store interface both engines implement, and its validation,
// the one check every engine applies to a record it reads or writes (the file store, the Redis
// store and the key manager all go through validateKeyRecord).
import { PLAN_NAMES, isPlanName } from '../plans.js';
import type { PlanName } from '../plans.js';
import { checkDashboardFields } from './fields.js';
import type { DashboardKeyFields } from './fields.js';

/**
 * One API key, stored as ONE JSON value per key in both engines. Engines must pass through
 * fields they do not know (newer builds add optional fields: name, allowlists, secret hash,
 * per-key limits...), so a record read, changed and written back keeps them.
 */
export interface KeyRecord extends DashboardKeyFields {
  /** Short public id: the first 12 hex digits of the hash (safe to show and log). */
  id: string;
  /** sha256 of the key, hex. */
  hash: string;
  plan: PlanName;
  /** Per-key override of the plan's daily credits. */
  dailyCredits?: number;
  /** Per-key override of the plan's credits per second (0: no throughput limit). */
  creditsPerSecond?: number;
  label?: string;
  createdAt: string;
  revokedAt?: string;
  /** Fields added by other features travel unchanged. */
  [extra: string]: unknown;
}

/** Where keys live. Writes by any process become visible to every watcher within a second. */
export interface KeyStore {
  /** Every key, revoked ones included. */
  list(): Promise<KeyRecord[]>;
  get(hash: string): Promise<KeyRecord | undefined>;
  /** Creates or replaces the record with `record.hash` (the whole JSON value). */
  put(record: KeyRecord): Promise<void>;
  /**
   * Calls `onChange` within a second of any change made by any process (and possibly more
   * often); the caller re-reads with list(). Returns the function that stops watching.
   */
  watch(onChange: () => void): () => void;
  close(): Promise<void>;
}

export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFileError';
  }
}

const nonNegInt = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Checks the fields this package relies on and keeps every other field as it is (one JSON value
 * per key: fields added by other features pass through).
 */
export function validateKeyRecord(r: unknown, where: string): KeyRecord {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new KeyFileError(`${where}: expected an object`);
  const o = r as Record<string, unknown>;
  if (typeof o['hash'] !== 'string' || !/^[0-9a-f]{64}$/.test(o['hash']))
    throw new KeyFileError(`${where}.hash: expected 64 hex digits`);
  if (typeof o['plan'] !== 'string' || !isPlanName(o['plan']))
    throw new KeyFileError(`${where}.plan: expected one of ${PLAN_NAMES.join(', ')}`);
  for (const f of ['dailyCredits', 'creditsPerSecond']) {
    if (o[f] !== undefined && !nonNegInt(o[f]))
      throw new KeyFileError(`${where}.${f}: expected a non-negative integer`);
  }
  for (const f of ['label', 'revokedAt']) {
    if (o[f] !== undefined && typeof o[f] !== 'string') throw new KeyFileError(`${where}.${f}: expected a string`);
  }
  return {
    ...o,
    ...checkDashboardFields(o, where, (m) => new KeyFileError(m)),
    id: typeof o['id'] === 'string' ? o['id'] : o['hash'].slice(0, 12),
    hash: o['hash'],
    plan: o['plan'],
    createdAt: typeof o['createdAt'] === 'string' ? o['createdAt'] : '',
  };
}
