// Per-key allowlists with Infura's semantics (docs.metamask.io, "Secure an API > Allowlists"):
//   - no allowlist: every request is accepted; once a type has entries, requests must pass it;
//   - at most MAX_ALLOWLIST_ENTRIES entries per type;
//   - types are AND-ed, entries of one type are OR-ed;
//   - contract addresses apply to the methods that take an address (ADDRESS_METHODS below:
//     eth_call and eth_estimateGas by `to`, eth_getBalance, eth_getCode, eth_getTransactionCount,
//     eth_getStorageAt, eth_getProof, eth_getStorageValues, eth_getLogs `address`); others pass;
//   - user agents match as substrings of the request's User-Agent;
//   - origins: `host`, `scheme://host` or `scheme://` (scheme only), host optionally with a port
//     and a leading `*.` wildcard for any subdomain (`https://*.example.com`); a scheme, when
//     given, must match;
//   - methods: the exact JSON-RPC method name.
// A refused call answers -32002 "rejected due to project ID settings".
// Pure functions only: no I/O, no clock. Used by the serving middleware and by the key manager
// (to validate entries before they are stored).

export const MAX_ALLOWLIST_ENTRIES = 30;
/** Longest accepted entry (an origin, a user-agent fragment, a method name). */
export const MAX_ALLOWLIST_ENTRY_LENGTH = 256;

export interface Allowlists {
  /** 0x-prefixed 20-byte addresses, stored lowercase. */
  addresses?: string[];
  /** Substrings of the User-Agent header. */
  userAgents?: string[];
  /** Origin patterns (see above), stored lowercase. */
  origins?: string[];
  /** JSON-RPC method names. */
  methods?: string[];
}

export const ALLOWLIST_TYPES = ['addresses', 'userAgents', 'origins', 'methods'] as const;
export type AllowlistType = (typeof ALLOWLIST_TYPES)[number];

export class AllowlistError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AllowlistError';
  }
}

/**
 * Where each address-taking method carries its address(es). Infura lists eth_call,
 * eth_estimateGas, eth_getLogs, eth_getBalance, eth_getCode, eth_getStorageAt and
 * eth_getTransactionCount; eth_getProof takes an address the same way as eth_getStorageAt.
 */
const ADDRESS_METHODS: Record<string, (params: unknown[]) => unknown> = {
  eth_getLogs: (p) => (isObject(p[0]) ? p[0]['address'] : undefined),
  eth_getStorageAt: (p) => p[0],
  eth_getProof: (p) => p[0],
  eth_getBalance: (p) => p[0],
  eth_getCode: (p) => p[0],
  eth_getTransactionCount: (p) => p[0],
  eth_call: (p) => (isObject(p[0]) ? p[0]['to'] : undefined),
  eth_estimateGas: (p) => (isObject(p[0]) ? p[0]['to'] : undefined),
  // Not on Infura's list (the method is newer): its addresses are the request's keys, as eth_getStorageAt's.
  eth_getStorageValues: (p) => (isObject(p[0]) ? Object.keys(p[0]) : undefined),
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function takesAddress(method: string): boolean {
  return Object.hasOwn(ADDRESS_METHODS, method);
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const METHOD = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;
const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

interface OriginPattern {
  scheme: string | undefined;
  /** Host without the `*.`; undefined for a scheme-only entry. */
  host: string | undefined;
  wildcard: boolean;
  port: string | undefined;
}

/** Parses an origin allowlist entry; throws AllowlistError naming the problem. */
export function parseOriginPattern(entry: string): OriginPattern {
  const e = entry.trim().toLowerCase();
  let rest = e;
  let scheme: string | undefined;
  const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(e);
  if (m) {
    scheme = m[1] as string;
    rest = m[2] as string;
  }
  if (rest === '') {
    if (scheme === undefined) throw new AllowlistError(`origin "${entry}": empty`);
    return { scheme, host: undefined, wildcard: false, port: undefined };
  }
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  let wildcard = false;
  if (rest.startsWith('*.')) {
    wildcard = true;
    rest = rest.slice(2);
  }
  let port: string | undefined;
  const pm = /^(.*):(\d{1,5})$/.exec(rest);
  if (pm) {
    rest = pm[1] as string;
    port = pm[2] as string;
    if (Number(port) > 65535) throw new AllowlistError(`origin "${entry}": port out of range`);
  }
  const ipv6 = /^\[[0-9a-f:.]+\]$/.test(rest);
  if (!ipv6 && (rest === '' || !rest.split('.').every((l) => HOST_LABEL.test(l)))) {
    throw new AllowlistError(`origin "${entry}": expected [scheme://][*.]host[:port], e.g. https://*.example.com`);
  }
  if (wildcard && ipv6) throw new AllowlistError(`origin "${entry}": a wildcard needs a domain name`);
  return { scheme, host: rest, wildcard, port };
}

/** Does the request's Origin header match one pattern? */
export function originMatches(entry: string, origin: string): boolean {
  let p: OriginPattern;
  try {
    p = parseOriginPattern(entry);
  } catch {
    return false;
  }
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  if (origin === 'null' || u.host === '') return false;
  const scheme = u.protocol.slice(0, -1);
  if (p.scheme !== undefined && p.scheme !== scheme) return false;
  if (p.host === undefined) return true; // scheme-only entry
  const host = u.hostname.toLowerCase();
  // An entry without a port matches an origin without one (the scheme's default port).
  if ((p.port ?? '') !== u.port) return false;
  if (p.wildcard) return host.endsWith(`.${p.host}`) && host.length > p.host.length + 1;
  return host === p.host;
}

function checkEntries(type: AllowlistType, raw: unknown): string[] {
  if (!Array.isArray(raw)) throw new AllowlistError(`${type}: expected an array of strings`);
  if (raw.length > MAX_ALLOWLIST_ENTRIES)
    throw new AllowlistError(`${type}: at most ${MAX_ALLOWLIST_ENTRIES} entries, got ${raw.length}`);
  const out: string[] = [];
  for (const v of raw) {
    if (typeof v !== 'string' || v.trim() === '')
      throw new AllowlistError(`${type}: entries must be non-empty strings`);
    if (v.length > MAX_ALLOWLIST_ENTRY_LENGTH)
      throw new AllowlistError(`${type}: an entry is longer than ${MAX_ALLOWLIST_ENTRY_LENGTH} characters`);
    let norm: string;
    switch (type) {
      case 'addresses':
        if (!ADDRESS.test(v.trim()))
          throw new AllowlistError(`addresses: "${v}" is not a 0x-prefixed 20-byte hex address`);
        norm = v.trim().toLowerCase();
        break;
      case 'origins':
        parseOriginPattern(v);
        norm = v.trim().toLowerCase();
        break;
      case 'methods':
        if (!METHOD.test(v.trim())) throw new AllowlistError(`methods: "${v}" is not a JSON-RPC method name`);
        norm = v.trim();
        break;
      case 'userAgents':
        // eslint-disable-next-line no-control-regex
        // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
        if (/[\u0000-\u001f\u007f]/.test(v)) throw new AllowlistError('userAgents: control characters are not allowed');
        norm = v;
        break;
    }
    if (!out.includes(norm)) out.push(norm);
  }
  return out;
}

/** Validates and normalises allowlists from untrusted input (API body, key file). */
export function validateAllowlists(raw: unknown): Allowlists {
  if (!isObject(raw)) throw new AllowlistError('expected an object with addresses, userAgents, origins, methods');
  const out: Allowlists = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(ALLOWLIST_TYPES as readonly string[]).includes(k))
      throw new AllowlistError(`unknown allowlist type "${k}" (expected one of ${ALLOWLIST_TYPES.join(', ')})`);
    if (v === undefined) continue;
    const entries = checkEntries(k as AllowlistType, v);
    if (entries.length > 0) out[k as AllowlistType] = entries;
  }
  return out;
}

/** What the allowlists see of one call. */
export interface AllowlistRequest {
  method: string;
  params: unknown[];
  /** Origin header ('' when absent). */
  origin: string;
  /** User-Agent header ('' when absent). */
  userAgent: string;
}

/** Addresses the call queries, or undefined when the method takes none; [] = "all addresses". */
function addressesOf(method: string, params: unknown[]): string[] | undefined {
  const get = ADDRESS_METHODS[method];
  if (get === undefined) return undefined;
  const v = get(params);
  if (typeof v === 'string') return [v.toLowerCase()];
  if (Array.isArray(v)) return v.map((a) => (typeof a === 'string' ? a.toLowerCase() : ''));
  return [];
}

/**
 * Undefined when the call passes every allowlist of the key, else the type that refused it
 * (for tests and usage classes; the client only sees -32002).
 */
export function allowlistRefusal(lists: Allowlists | undefined, req: AllowlistRequest): AllowlistType | undefined {
  if (lists === undefined) return undefined;
  const { methods, origins, userAgents, addresses } = lists;
  if (methods !== undefined && methods.length > 0 && !methods.includes(req.method)) return 'methods';
  if (origins !== undefined && origins.length > 0 && !origins.some((o) => originMatches(o, req.origin)))
    return 'origins';
  if (userAgents !== undefined && userAgents.length > 0 && !userAgents.some((u) => req.userAgent.includes(u)))
    return 'userAgents';
  if (addresses !== undefined && addresses.length > 0) {
    const queried = addressesOf(req.method, req.params);
    if (queried !== undefined) {
      // A query over every address (eth_getLogs without `address`) is not within the list.
      if (queried.length === 0 || !queried.every((a) => addresses.includes(a))) return 'addresses';
    }
  }
  return undefined;
}
