// The dashboard's own security: one admin token (created once by `node-cli admin token create`,
// stored as sha256 in <datadir>/admin.json), exchanged at login for a session cookie
// (HttpOnly; SameSite=Strict; Secure over TLS); a CSRF token per session that every
// state-changing call must echo in a header, on top of an Origin / Sec-Fetch-Site check;
// login attempts rate-limited per client address and overall.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile, writeFileAtomic } from '@chainnode/core';

export const ADMIN_FILE = 'admin.json';
export const SESSION_COOKIE = 'chainnode_session';
export const CSRF_HEADER = 'x-csrf-token';
/** Sessions end after this long idle, and in any case after SESSION_MAX_MS. */
export const SESSION_IDLE_MS = 2 * 3600_000;
export const SESSION_MAX_MS = 12 * 3600_000;
export const MAX_SESSIONS = 1000;

export class AdminTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdminTokenError';
  }
}

interface AdminFile {
  version: 1;
  tokenHash: string;
  createdAt: string;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function adminPath(datadir: string): string {
  return join(datadir, ADMIN_FILE);
}

function readAdmin(datadir: string): AdminFile | undefined {
  const o = readJsonFile(adminPath(datadir), (m) => new AdminTokenError(m));
  if (o === undefined) return undefined;
  const r = o as Partial<AdminFile> | null;
  if (!r || typeof r.tokenHash !== 'string' || !/^[0-9a-f]{64}$/.test(r.tokenHash))
    throw new AdminTokenError(`${adminPath(datadir)}: expected {"version":1,"tokenHash":"<64 hex>"}`);
  return { version: 1, tokenHash: r.tokenHash, createdAt: typeof r.createdAt === 'string' ? r.createdAt : '' };
}

export function hasAdminToken(datadir: string): boolean {
  return readAdmin(datadir) !== undefined;
}

/**
 * Creates the admin token and stores its hash; returns the token (to print once). Refuses when
 * one exists unless `replace` (which also ends every session at the next restart).
 */
export function createAdminToken(datadir: string, replace = false): string {
  if (!replace && readAdmin(datadir) !== undefined) {
    throw new AdminTokenError(
      'an admin token exists already (it is shown only when created); use --replace to make a new one',
    );
  }
  const token = `cna_${randomBytes(32).toString('base64url')}`;
  const body: AdminFile = { version: 1, tokenHash: sha256(token).toString('hex'), createdAt: new Date().toISOString() };
  mkdirSync(datadir, { recursive: true });
  const path = adminPath(datadir);
  writeFileAtomic(path, `${JSON.stringify(body, null, 2)}\n`);
  return token;
}

/** Checks a presented token against the stored hash (re-read each time: a replaced token applies at once). */
export function verifyAdminToken(datadir: string, token: string): boolean {
  if (token.length === 0 || token.length > 200) return false;
  const stored = readAdmin(datadir);
  if (!stored) return false;
  return timingSafeEqual(sha256(token), Buffer.from(stored.tokenHash, 'hex'));
}

export interface Session {
  /** The CSRF token the page echoes in the X-CSRF-Token header. */
  csrf: string;
  created: number;
  seen: number;
}

/** Sessions in memory, keyed by sha256 of the cookie value (the value itself is never kept). */
export class Sessions {
  private readonly byHash = new Map<string, Session>();

  constructor(private readonly now: () => number = Date.now) {}

  create(): { cookie: string; session: Session } {
    this.sweep();
    if (this.byHash.size >= MAX_SESSIONS) {
      // Oldest first (Map keeps insertion order).
      const oldest = this.byHash.keys().next().value;
      if (oldest !== undefined) this.byHash.delete(oldest);
    }
    const cookie = randomBytes(32).toString('base64url');
    const t = this.now();
    const session: Session = { csrf: randomBytes(32).toString('base64url'), created: t, seen: t };
    this.byHash.set(sha256(cookie).toString('hex'), session);
    return { cookie, session };
  }

  get(cookie: string | undefined): Session | undefined {
    if (cookie === undefined || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) return undefined;
    const h = sha256(cookie).toString('hex');
    const s = this.byHash.get(h);
    if (!s) return undefined;
    const t = this.now();
    if (t - s.seen > SESSION_IDLE_MS || t - s.created > SESSION_MAX_MS) {
      this.byHash.delete(h);
      return undefined;
    }
    s.seen = t;
    return s;
  }

  destroy(cookie: string | undefined): void {
    if (cookie !== undefined) this.byHash.delete(sha256(cookie).toString('hex'));
  }

  clear(): void {
    this.byHash.clear();
  }

  private sweep(): void {
    const t = this.now();
    for (const [h, s] of this.byHash)
      if (t - s.seen > SESSION_IDLE_MS || t - s.created > SESSION_MAX_MS) this.byHash.delete(h);
  }
}

export function csrfMatches(session: Session, header: string | undefined): boolean {
  if (header === undefined || header.length !== session.csrf.length) return false;
  return timingSafeEqual(Buffer.from(header), Buffer.from(session.csrf));
}

/**
 * Fixed-window login throttle: at most `perClient` failed attempts per client address and
 * `overall` failed attempts in total per window; a success does not reset the overall count.
 */
export class LoginThrottle {
  private window = 0;
  private readonly failures = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perClient = 5,
    private readonly overall = 50,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  private roll(): void {
    const w = Math.floor(this.now() / this.windowMs);
    if (w !== this.window) {
      this.window = w;
      this.failures.clear();
      this.total = 0;
    }
  }

  /** Seconds until another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(client: string): number {
    this.roll();
    if ((this.failures.get(client) ?? 0) >= this.perClient || this.total >= this.overall) {
      return Math.max(1, Math.ceil(((this.window + 1) * this.windowMs - this.now()) / 1000));
    }
    return 0;
  }

  failed(client: string): void {
    this.roll();
    if (this.failures.size < 10_000 || this.failures.has(client))
      this.failures.set(client, (this.failures.get(client) ?? 0) + 1);
    this.total++;
  }
}

/** Parses the Cookie header for our session cookie. */
export function sessionCookie(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function setCookie(value: string, secure: boolean, maxAgeSeconds = SESSION_MAX_MS / 1000): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

export function clearCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

/**
 * CSRF, first layer (OWASP: Fetch Metadata with an Origin fallback): a state-changing request
 * must come from this very origin. With an Origin header it must equal `<scheme>://<Host>`;
 * without one, Sec-Fetch-Site must say same-origin; with neither, it is refused (a browser always
 * sends one of them on a POST; other clients can set Origin). The second layer is the CSRF token.
 */
export function sameOrigin(
  headers: { origin?: string | undefined; secFetchSite?: string | undefined; host?: string | undefined },
  scheme: 'http' | 'https',
): boolean {
  if (headers.secFetchSite !== undefined && headers.secFetchSite !== 'same-origin') return false;
  if (headers.origin !== undefined) {
    if (headers.host === undefined || headers.host === '') return false;
    return headers.origin === `${scheme}://${headers.host}`;
  }
  return headers.secFetchSite === 'same-origin';
}
