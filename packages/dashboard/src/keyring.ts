// The one key-management module: every action of the dashboard and of `node-cli keys` goes
// through KeyManager, so both validate the same way and write the same records. It works over
// the key store of today (<datadir>/keys.json, written atomically; a running server reloads it
// within a second) and reads usage from the usage record and the credit ledger.
//
// Secrets (the key, its API secret) leave this module only in the return value of the action
// that created them (create, rotate, createSecret), once; nothing here logs.
import {
  KEY_PREFIX_LENGTH,
  PLAN_NAMES,
  chargeHash,
  dailyLimit,
  findKey,
  generateKey,
  generateSecret,
  hashKey,
  isPlanName,
  nextUtcMidnight,
  readKeys,
  readUsage,
  readUsageStats,
  utcDay,
  validateAllowlists,
  writeKeys,
  AllowlistError,
  USAGE_DAYS,
} from '@chainnode/server';
import type { Allowlists, Counters, CreditLedger, DayUsage, KeyLimits, KeyRecord, MinuteUsage, PlanName, ServerConfig, UsageRecord } from '@chainnode/server';

/** A refused action: bad input (400) or no such key (404). The message is safe to show. */
export class KeyActionError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 404 | 409 = 400,
  ) {
    super(message);
    this.name = 'KeyActionError';
  }
}

export const MAX_NAME_LENGTH = 64;
export const MAX_NETWORKS = 32;
const NETWORK = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** What the dashboard and `keys list` show of a key: never the key, its hash or its secret. */
export interface KeyView {
  id: string;
  name: string;
  /** The first characters of the key itself, e.g. "3f9a1c…"; null for keys made before prefixes were kept. */
  prefix: string | null;
  plan: PlanName;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  rotatedAt: string | null;
  /** Last call seen in the usage record (minute precision within 15 minutes, else the day). */
  lastUsed: string | null;
  networks: string[] | null;
  limits: { creditsPerDay: number | null; creditsPerSecond: number | null };
  /** The plan's (or the key's override of the) daily balance. */
  planDailyCredits: number;
  allowlists: Required<Allowlists>;
  secret: { set: boolean; required: boolean };
}

export interface KeyUsage {
  id: string;
  days: DayUsage[];
  minutes: MinuteUsage[];
  /** Per method over the days returned. */
  methods: Array<{ method: string } & Counters>;
  balance: {
    /** The limit in force today: the smaller of the plan's balance and the key's own daily limit. */
    dailyCredits: number;
    used: number;
    remaining: number;
    resetsAt: string;
  };
}

export interface CreateInput {
  name: string;
  plan: string;
  networks?: string[] | undefined;
  limits?: KeyLimits | undefined;
  /** Per-key override of the plan's daily balance (the older `--daily-credits`). */
  dailyCredits?: number | undefined;
}

export interface UpdateInput {
  name?: string;
  networks?: string[] | null;
  limits?: { creditsPerDay?: number | null; creditsPerSecond?: number | null };
  allowlists?: unknown;
  secretRequired?: boolean;
}

function validName(v: unknown): string {
  if (typeof v !== 'string') throw new KeyActionError('name: expected a string');
  const name = v.trim();
  if (name === '' || name.length > MAX_NAME_LENGTH) throw new KeyActionError(`name: 1 to ${MAX_NAME_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new KeyActionError('name: control characters are not allowed');
  return name;
}

function validNetworks(v: unknown): string[] {
  if (!Array.isArray(v)) throw new KeyActionError('networks: expected an array of network names');
  if (v.length > MAX_NETWORKS) throw new KeyActionError(`networks: at most ${MAX_NETWORKS}`);
  const out: string[] = [];
  for (const n of v) {
    if (typeof n !== 'string' || !NETWORK.test(n)) throw new KeyActionError(`networks: "${String(n)}" is not a network name (lowercase letters, digits, -)`);
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

function validCredits(field: string, v: unknown): number | undefined {
  if (v === null || v === undefined || v === 0) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new KeyActionError(`${field}: expected a non-negative integer (0: the plan's)`);
  return v;
}

export interface KeyManagerOptions {
  datadir: string;
  config: ServerConfig;
  /** The running server's usage record (else the files of the embedded one are read). */
  usage?: UsageRecord;
  /** The running server's ledger (else today's journal is read). */
  ledger?: CreditLedger;
  now?: () => number;
}

export class KeyManager {
  private readonly now: () => number;

  constructor(private readonly o: KeyManagerOptions) {
    this.now = o.now ?? Date.now;
  }

  get plans(): Array<{ name: PlanName; dailyCredits: number }> {
    return PLAN_NAMES.map((name) => ({ name, dailyCredits: this.o.config.plans[name].dailyCredits }));
  }

  private all(): KeyRecord[] {
    return readKeys(this.o.datadir);
  }

  /** Finds by id, or (CLI) by the plaintext key. */
  private find(keys: KeyRecord[], keyOrId: string): KeyRecord {
    const rec = /^[0-9a-f]{12}$/.test(keyOrId) ? keys.find((k) => k.id === keyOrId) ?? findKey(keys, keyOrId) : findKey(keys, keyOrId);
    if (!rec) throw new KeyActionError('no such key (give its id from the key list, or the key itself)', 404);
    return rec;
  }

  private mutate<T>(keyOrId: string, f: (rec: KeyRecord) => T): T {
    const keys = this.all();
    const rec = this.find(keys, keyOrId);
    const out = f(rec);
    writeKeys(this.o.datadir, keys);
    return out;
  }

  list(): KeyView[] {
    return this.all().map((k) => this.view(k));
  }

  get(keyOrId: string): KeyView {
    return this.view(this.find(this.all(), keyOrId));
  }

  create(input: CreateInput): { key: string; view: KeyView } {
    const name = validName(input.name);
    if (typeof input.plan !== 'string' || !isPlanName(input.plan)) throw new KeyActionError(`plan: expected one of ${PLAN_NAMES.join(', ')}`);
    const key = generateKey();
    const hash = hashKey(key);
    const rec: KeyRecord = { id: hash.slice(0, 12), hash, plan: input.plan, createdAt: new Date(this.now()).toISOString(), name, prefix: key.slice(0, KEY_PREFIX_LENGTH) };
    const daily = validCredits('dailyCredits', input.dailyCredits);
    if (daily !== undefined) rec.dailyCredits = daily;
    if (input.networks !== undefined) rec.networks = validNetworks(input.networks);
    if (input.limits !== undefined) this.applyLimits(rec, input.limits);
    const keys = this.all();
    keys.push(rec);
    writeKeys(this.o.datadir, keys);
    return { key, view: this.view(rec) };
  }

  private applyLimits(rec: KeyRecord, l: { creditsPerDay?: number | null | undefined; creditsPerSecond?: number | null | undefined }): void {
    if (typeof l !== 'object' || l === null) throw new KeyActionError('limits: expected {creditsPerDay, creditsPerSecond}');
    for (const k of Object.keys(l)) if (k !== 'creditsPerDay' && k !== 'creditsPerSecond') throw new KeyActionError(`limits.${k}: unknown field`);
    const limits: KeyLimits = { ...rec.limits };
    if ('creditsPerDay' in l) {
      const v = validCredits('limits.creditsPerDay', l.creditsPerDay);
      if (v === undefined) delete limits.creditsPerDay;
      else limits.creditsPerDay = v;
    }
    if ('creditsPerSecond' in l) {
      const v = validCredits('limits.creditsPerSecond', l.creditsPerSecond);
      if (v === undefined) delete limits.creditsPerSecond;
      else limits.creditsPerSecond = v;
    }
    if (limits.creditsPerDay === undefined && limits.creditsPerSecond === undefined) delete rec.limits;
    else rec.limits = limits;
  }

  update(keyOrId: string, input: UpdateInput): KeyView {
    if (typeof input !== 'object' || input === null) throw new KeyActionError('expected a JSON object');
    for (const k of Object.keys(input)) {
      if (!['name', 'networks', 'limits', 'allowlists', 'secretRequired'].includes(k)) throw new KeyActionError(`${k}: unknown field`);
    }
    return this.mutate(keyOrId, (rec) => {
      if (rec.revokedAt !== undefined) throw new KeyActionError('the key is revoked', 409);
      if (input.name !== undefined) rec.name = validName(input.name);
      if (input.networks !== undefined) {
        if (input.networks === null) delete rec.networks;
        else rec.networks = validNetworks(input.networks);
      }
      if (input.limits !== undefined) this.applyLimits(rec, input.limits);
      if (input.allowlists !== undefined) {
        let lists: Allowlists;
        try {
          lists = validateAllowlists(input.allowlists);
        } catch (err) {
          if (err instanceof AllowlistError) throw new KeyActionError(`allowlists: ${err.message}`);
          throw err;
        }
        if (Object.keys(lists).length === 0) delete rec.allowlists;
        else rec.allowlists = lists;
      }
      if (input.secretRequired !== undefined) {
        if (typeof input.secretRequired !== 'boolean') throw new KeyActionError('secretRequired: expected true or false');
        if (input.secretRequired && rec.secretHash === undefined) throw new KeyActionError('secretRequired: create a secret first', 409);
        if (input.secretRequired) rec.secretRequired = true;
        else delete rec.secretRequired;
      }
      return this.view(rec);
    });
  }

  rename(keyOrId: string, name: string): KeyView {
    return this.update(keyOrId, { name });
  }

  revoke(keyOrId: string): KeyView {
    return this.mutate(keyOrId, (rec) => {
      rec.revokedAt ??= new Date(this.now()).toISOString();
      return this.view(rec);
    });
  }

  /**
   * A new key value for the same record: same id, settings and daily balance (the ledger keeps
   * charging the original identity); the old value stops working within a second.
   */
  rotate(keyOrId: string): { key: string; view: KeyView } {
    const key = generateKey();
    const view = this.mutate(keyOrId, (rec) => {
      if (rec.revokedAt !== undefined) throw new KeyActionError('the key is revoked', 409);
      rec.chargeTo = chargeHash(rec);
      rec.hash = hashKey(key);
      rec.prefix = key.slice(0, KEY_PREFIX_LENGTH);
      rec.rotatedAt = new Date(this.now()).toISOString();
      return this.view(rec);
    });
    return { key, view };
  }

  /** Creates (or replaces) the key's API secret; returns it once. */
  createSecret(keyOrId: string): { secret: string; view: KeyView } {
    const secret = generateSecret();
    const view = this.mutate(keyOrId, (rec) => {
      if (rec.revokedAt !== undefined) throw new KeyActionError('the key is revoked', 409);
      rec.secretHash = hashKey(secret);
      return this.view(rec);
    });
    return { secret, view };
  }

  deleteSecret(keyOrId: string): KeyView {
    return this.mutate(keyOrId, (rec) => {
      delete rec.secretHash;
      delete rec.secretRequired;
      return this.view(rec);
    });
  }

  usage(keyOrId: string, nDays = USAGE_DAYS): KeyUsage {
    const rec = this.find(this.all(), keyOrId);
    const n = Math.min(Math.max(1, Math.trunc(nDays)), USAGE_DAYS);
    let days: DayUsage[];
    let minutes: MinuteUsage[];
    if (this.o.usage) {
      days = this.o.usage.days(rec.id, n);
      minutes = this.o.usage.minutes(rec.id);
    } else {
      const r = readUsageStats(this.o.datadir, rec.id, this.now());
      days = r.days.slice(-n);
      minutes = r.minutes;
    }
    const methods = new Map<string, Counters>();
    for (const d of days) {
      for (const [m, c] of Object.entries(d.methods)) {
        const t = methods.get(m) ?? { calls: 0, credits: 0, e4xx: 0, e5xx: 0, erpc: 0 };
        t.calls += c.calls;
        t.credits += c.credits;
        t.e4xx += c.e4xx;
        t.e5xx += c.e5xx;
        t.erpc += c.erpc;
        methods.set(m, t);
      }
    }
    const used = this.o.ledger ? this.o.ledger.used(chargeHash(rec)) : (readUsage(this.o.datadir, utcDay(this.now())).get(chargeHash(rec)) ?? 0);
    const daily = this.dailyCredits(rec);
    return {
      id: rec.id,
      days,
      minutes,
      methods: [...methods].map(([method, c]) => ({ method, ...c })).sort((a, b) => b.credits - a.credits || b.calls - a.calls || a.method.localeCompare(b.method)),
      balance: { dailyCredits: daily, used, remaining: Math.max(0, daily - used), resetsAt: nextUtcMidnight(this.now()).toISOString() },
    };
  }

  private dailyCredits(rec: KeyRecord): number {
    const plan = dailyLimit(this.o.config, rec);
    const own = rec.limits?.creditsPerDay;
    return own !== undefined && own > 0 ? Math.min(plan, own) : plan;
  }

  private lastUsed(rec: KeyRecord): string | null {
    const minutes = this.o.usage ? this.o.usage.minutes(rec.id) : undefined;
    if (minutes) {
      for (let i = minutes.length - 1; i >= 0; i--) if ((minutes[i] as MinuteUsage).calls > 0) return (minutes[i] as MinuteUsage).minute;
      const days = this.o.usage?.days(rec.id) ?? [];
      for (let i = days.length - 1; i >= 0; i--) if ((days[i] as DayUsage).calls > 0) return (days[i] as DayUsage).day;
      return null;
    }
    // Another process (CLI): the files of the embedded record, days only (cheap enough for a list).
    const r = readUsageStats(this.o.datadir, rec.id, this.now());
    for (let i = r.minutes.length - 1; i >= 0; i--) if ((r.minutes[i] as MinuteUsage).calls > 0) return (r.minutes[i] as MinuteUsage).minute;
    for (let i = r.days.length - 1; i >= 0; i--) if ((r.days[i] as DayUsage).calls > 0) return (r.days[i] as DayUsage).day;
    return null;
  }

  view(rec: KeyRecord): KeyView {
    return {
      id: rec.id,
      name: rec.name ?? rec.label ?? '',
      prefix: rec.prefix ?? null,
      plan: rec.plan,
      status: rec.revokedAt === undefined ? 'active' : 'revoked',
      createdAt: rec.createdAt,
      revokedAt: rec.revokedAt ?? null,
      rotatedAt: rec.rotatedAt ?? null,
      lastUsed: this.lastUsed(rec),
      networks: rec.networks ?? null,
      limits: { creditsPerDay: rec.limits?.creditsPerDay ?? null, creditsPerSecond: rec.limits?.creditsPerSecond ?? null },
      planDailyCredits: dailyLimit(this.o.config, rec),
      allowlists: {
        addresses: rec.allowlists?.addresses ?? [],
        userAgents: rec.allowlists?.userAgents ?? [],
        origins: rec.allowlists?.origins ?? [],
        methods: rec.allowlists?.methods ?? [],
      },
      secret: { set: rec.secretHash !== undefined, required: rec.secretRequired === true },
    };
  }
}
