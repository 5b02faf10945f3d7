// The optional fields of a key record that the dashboard adds. Both key stores keep a
// record as one JSON value and pass unknown fields through; these are checked here, once, on
// every read (validateKeyRecord), so the serving path only ever sees well-formed values.
import { AllowlistError, validateAllowlists } from './allowlist.js';
import type { Allowlists } from './allowlist.js';
import { NETWORK_NAME_RE } from './network-name.js';

/** At most this many network names on one key. */
export const MAX_KEY_NETWORKS = 32;

export interface KeyLimits {
  /** Credits per UTC day for this key (absent: the plan's). Over it: HTTP 429, event -33400. */
  creditsPerDay?: number;
  /** Credits per second for this key (absent: the plan's). Over it: HTTP 429, event -33300. */
  creditsPerSecond?: number;
}

export interface DashboardKeyFields {
  /** Display name; older keys show `label`. */
  name?: string;
  /** The first KEY_PREFIX_LENGTH characters of the key itself (not of its hash), to recognise it. */
  prefix?: string;
  /**
   * Networks the key may use (names as in `serve --network <name>=…`; enforced by the Host
   * routing: another network gets 403 / -32002, uncharged); absent = all.
   */
  networks?: string[];
  /** User-defined limits below the plan's (Infura "Key Credit Limits"). */
  limits?: KeyLimits;
  /** Infura-style allowlists (allowlist.ts). */
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
  /** Set on the record of a rotated-away value: the hash of its successor (the record is hidden). */
  replacedBy?: string;
}

const HEX64 = /^[0-9a-f]{64}$/;
const nonNegInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Validates the dashboard fields of a raw record; throws `fail(message)` on a malformed one. */
export function checkDashboardFields(
  o: Record<string, unknown>,
  where: string,
  fail: (message: string) => Error,
): DashboardKeyFields {
  const out: DashboardKeyFields = {};
  for (const f of ['name', 'rotatedAt'] as const) {
    if (o[f] === undefined) continue;
    if (typeof o[f] !== 'string') throw fail(`${where}.${f}: expected a string`);
    out[f] = o[f];
  }
  if (o['prefix'] !== undefined) {
    if (typeof o['prefix'] !== 'string' || !/^[0-9a-f]{1,16}$/.test(o['prefix']))
      throw fail(`${where}.prefix: expected 1-16 hex digits`);
    out.prefix = o['prefix'];
  }
  if (o['networks'] !== undefined) {
    const n = o['networks'];
    if (
      !Array.isArray(n) ||
      n.length > MAX_KEY_NETWORKS ||
      !n.every((x) => typeof x === 'string' && NETWORK_NAME_RE.test(x))
    ) {
      throw fail(`${where}.networks: expected at most ${MAX_KEY_NETWORKS} network names (lowercase DNS labels)`);
    }
    out.networks = [...new Set(n as string[])];
  }
  if (o['limits'] !== undefined) {
    const l = o['limits'];
    if (typeof l !== 'object' || l === null || Array.isArray(l)) throw fail(`${where}.limits: expected an object`);
    const limits: KeyLimits = {};
    for (const f of ['creditsPerDay', 'creditsPerSecond'] as const) {
      const v = (l as Record<string, unknown>)[f];
      if (v === undefined) continue;
      if (!nonNegInt(v)) throw fail(`${where}.limits.${f}: expected a non-negative integer`);
      limits[f] = v;
    }
    out.limits = limits;
  }
  if (o['allowlists'] !== undefined) {
    try {
      out.allowlists = validateAllowlists(o['allowlists']);
    } catch (err) {
      if (err instanceof AllowlistError) throw fail(`${where}.allowlists: ${err.message}`);
      throw err;
    }
  }
  for (const f of ['secretHash', 'chargeTo', 'replacedBy'] as const) {
    if (o[f] === undefined) continue;
    if (typeof o[f] !== 'string' || !HEX64.test(o[f])) throw fail(`${where}.${f}: expected 64 hex digits`);
    out[f] = o[f];
  }
  if (o['secretRequired'] !== undefined) {
    if (typeof o['secretRequired'] !== 'boolean') throw fail(`${where}.secretRequired: expected a boolean`);
    if (o['secretRequired']) out.secretRequired = true;
  }
  return out;
}
