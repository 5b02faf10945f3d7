// The one key-management module: every action of the dashboard and of `node-cli keys` goes
// through KeyManager, so both validate the same way and write the same records. It works over
// the ledger's KeyStore (embedded: <datadir>/keys.json; Redis: one JSON value per key; servers
// pick changes up within a second) and reads usage from the usage record and the credit ledger
// of the same engine.
//
// Secrets (the key, its API secret) leave this module only in the return value of the action
// that created them (create, rotate, createSecret), once; nothing here logs.
import { effectiveLimits, limitsOf } from '../limits.js';
import { PLAN_NAMES, isPlanName } from '../plans.js';
import type { PlanName, PlansOf } from '../plans.js';
import type { Usage } from '../ledger/api.js';
import { USAGE_DAYS } from '../usage/record.js';
import type { Counters, DayUsage, MinuteUsage, UsageRecord } from '../usage/record.js';
import { AllowlistError, validateAllowlists } from './allowlist.js';
import type { Allowlists } from './allowlist.js';
import { MAX_KEY_NETWORKS } from './fields.js';
import type { KeyLimits } from './fields.js';
import { KEY_PREFIX_LENGTH, chargeHash, generateKey, generateSecret, hashKey, newKey } from './keys.js';
import { networkNameProblem } from './network-name.js';
import type { KeyRecord, KeyStore } from './record.js';

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
/** At most this many networks on one key (the server's limit on KeyRecord.networks). */
export const MAX_NETWORKS = MAX_KEY_NETWORKS;

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
  /** The plan's (or the operator's per-key override of the) daily balance and credits per second. */
  planDailyCredits: number;
  planCreditsPerSecond: number;
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
    /** Today's credits by the network they were charged on ("" = a server without networks); sums to `used`. */
    byNetwork: Record<string, number>;
  };
}

export interface CreateInput {
  name: string;
  plan: string;
  networks?: string[] | undefined;
  limits?: KeyLimits | undefined;
  /** Operator overrides of the plan's daily credits and credits per second (`--daily-credits`, `--credits-per-second`). */
  dailyCredits?: number | undefined;
  creditsPerSecond?: number | undefined;
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
  if (name === '' || name.length > MAX_NAME_LENGTH)
    throw new KeyActionError(`name: 1 to ${MAX_NAME_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new KeyActionError('name: control characters are not allowed');
  return name;
}

function validNetworks(v: unknown): string[] {
  if (!Array.isArray(v)) throw new KeyActionError('networks: expected an array of network names');
  if (v.length > MAX_NETWORKS) throw new KeyActionError(`networks: at most ${MAX_NETWORKS}`);
  if (v.length === 0)
    throw new KeyActionError('networks: give at least one network name (or none at all for every network)');
  const out: string[] = [];
  for (const n of v) {
    // The names `serve --network <name>=…` accepts: the first DNS label of the Host.
    if (typeof n !== 'string') throw new KeyActionError('networks: expected an array of network names');
    const problem = networkNameProblem(n);
    if (problem !== undefined) throw new KeyActionError(`networks: ${problem}`);
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

function validCredits(field: string, v: unknown): number | undefined {
  if (v === null || v === undefined || v === 0) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new KeyActionError(`${field}: expected a non-negative integer (0: the plan's)`);
  return v;
}

export interface KeyManagerOptions {
  /** The ledger's key store (openLedger().keys). */
  keys: KeyStore;
  /** The plans in force (the server configuration has them). */
  config: PlansOf;
  /** The ledger's usage record (openLedger().usageRecord(), or the running server's). */
  usage: UsageRecord;
  /** Today's credits of a ledger identity (openLedger().usage). */
  balance: (hash: string) => Promise<Usage>;
  now?: () => number;
}

export class KeyManager {
  private readonly now: () => number;

  constructor(private readonly o: KeyManagerOptions) {
    this.now = o.now ?? Date.now;
  }

  get plans(): Array<{ name: PlanName; dailyCredits: number; creditsPerSecond: number }> {
    return PLAN_NAMES.map((name) => ({
      name,
      dailyCredits: this.o.config.plans[name].dailyCredits,
      creditsPerSecond: this.o.config.plans[name].creditsPerSecond,
    }));
  }

  /** Every key, less the records of rotated-away values (kept, revoked, so they stay refused). */
  private async all(): Promise<KeyRecord[]> {
    return (await this.o.keys.list()).filter((k) => k.replacedBy === undefined);
  }

  /** Finds by id, or (CLI) by the plaintext key. */
  private async find(keyOrId: string): Promise<KeyRecord> {
    const keys = await this.all();
    const h = hashKey(keyOrId);
    const rec = keys.find((k) => k.id === keyOrId) ?? keys.find((k) => k.hash === h);
    if (!rec) throw new KeyActionError('no such key (give its id from the key list, or the key itself)', 404);
    return rec;
  }

  private async mutate<T>(keyOrId: string, f: (rec: KeyRecord) => T): Promise<T> {
    const rec = await this.find(keyOrId);
    const out = f(rec);
    await this.o.keys.put(rec);
    return out;
  }

  async list(): Promise<KeyView[]> {
    return Promise.all((await this.all()).map((k) => this.view(k)));
  }

  async get(keyOrId: string): Promise<KeyView> {
    return this.view(await this.find(keyOrId));
  }

  async create(input: CreateInput): Promise<{ key: string; view: KeyView }> {
    const name = validName(input.name);
    if (typeof input.plan !== 'string' || !isPlanName(input.plan))
      throw new KeyActionError(`plan: expected one of ${PLAN_NAMES.join(', ')}`);
    const { key, record: rec } = newKey(input.plan, new Date(this.now()), name);
    const daily = validCredits('dailyCredits', input.dailyCredits);
    if (daily !== undefined) rec.dailyCredits = daily;
    if (input.creditsPerSecond !== undefined) {
      if (!Number.isSafeInteger(input.creditsPerSecond) || input.creditsPerSecond < 0)
        throw new KeyActionError('creditsPerSecond: expected a non-negative integer');
      rec.creditsPerSecond = input.creditsPerSecond;
    }
    if (input.networks !== undefined) rec.networks = validNetworks(input.networks);
    if (input.limits !== undefined) this.applyLimits(rec, input.limits);
    await this.o.keys.put(rec);
    return { key, view: await this.view(rec) };
  }

  private applyLimits(
    rec: KeyRecord,
    l: { creditsPerDay?: number | null | undefined; creditsPerSecond?: number | null | undefined },
  ): void {
    if (typeof l !== 'object' || l === null)
      throw new KeyActionError('limits: expected {creditsPerDay, creditsPerSecond}');
    for (const k of Object.keys(l))
      if (k !== 'creditsPerDay' && k !== 'creditsPerSecond') throw new KeyActionError(`limits.${k}: unknown field`);
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

  async update(keyOrId: string, input: UpdateInput): Promise<KeyView> {
    if (typeof input !== 'object' || input === null) throw new KeyActionError('expected a JSON object');
    for (const k of Object.keys(input)) {
      if (!['name', 'networks', 'limits', 'allowlists', 'secretRequired'].includes(k))
        throw new KeyActionError(`${k}: unknown field`);
    }
    const rec = await this.mutate(keyOrId, (rec) => {
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
        if (typeof input.secretRequired !== 'boolean')
          throw new KeyActionError('secretRequired: expected true or false');
        if (input.secretRequired && rec.secretHash === undefined)
          throw new KeyActionError('secretRequired: create a secret first', 409);
        if (input.secretRequired) rec.secretRequired = true;
        else delete rec.secretRequired;
      }
      return rec;
    });
    return this.view(rec);
  }

  rename(keyOrId: string, name: string): Promise<KeyView> {
    return this.update(keyOrId, { name });
  }

  async revoke(keyOrId: string): Promise<KeyView> {
    const rec = await this.mutate(keyOrId, (rec) => {
      rec.revokedAt ??= new Date(this.now()).toISOString();
      return rec;
    });
    return this.view(rec);
  }

  /**
   * A new key value for the same record: same id, settings and daily balance (the ledger keeps
   * charging the original identity, chargeTo). The old value's record stays in the store,
   * revoked and marked replacedBy (stores are keyed by hash and have no delete), so it is refused
   * (401) within a second; lists hide it.
   */
  async rotate(keyOrId: string): Promise<{ key: string; view: KeyView }> {
    const old = await this.find(keyOrId);
    if (old.revokedAt !== undefined) throw new KeyActionError('the key is revoked', 409);
    const key = generateKey();
    const at = new Date(this.now()).toISOString();
    const rec: KeyRecord = {
      ...old,
      hash: hashKey(key),
      chargeTo: chargeHash(old),
      prefix: key.slice(0, KEY_PREFIX_LENGTH),
      rotatedAt: at,
    };
    await this.o.keys.put(rec);
    await this.o.keys.put({ ...old, revokedAt: at, replacedBy: rec.hash });
    return { key, view: await this.view(rec) };
  }

  /** Creates (or replaces) the key's API secret; returns it once. */
  async createSecret(keyOrId: string): Promise<{ secret: string; view: KeyView }> {
    const secret = generateSecret();
    const rec = await this.mutate(keyOrId, (rec) => {
      if (rec.revokedAt !== undefined) throw new KeyActionError('the key is revoked', 409);
      rec.secretHash = hashKey(secret);
      return rec;
    });
    return { secret, view: await this.view(rec) };
  }

  async deleteSecret(keyOrId: string): Promise<KeyView> {
    const rec = await this.mutate(keyOrId, (rec) => {
      delete rec.secretHash;
      delete rec.secretRequired;
      return rec;
    });
    return this.view(rec);
  }

  async usage(keyOrId: string, nDays = USAGE_DAYS): Promise<KeyUsage> {
    const rec = await this.find(keyOrId);
    const n = Math.min(Math.max(1, Math.trunc(nDays)), USAGE_DAYS);
    const [days, minutes, today] = await Promise.all([
      this.o.usage.days(rec.id, n),
      this.o.usage.minutes(rec.id),
      this.o.balance(chargeHash(rec)),
    ]);
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
    const daily = effectiveLimits(this.o.config, rec).daily;
    return {
      id: rec.id,
      days,
      minutes,
      methods: [...methods]
        .map(([method, c]) => ({ method, ...c }))
        .sort((a, b) => b.credits - a.credits || b.calls - a.calls || a.method.localeCompare(b.method)),
      balance: {
        dailyCredits: daily,
        used: today.used,
        remaining: Math.max(0, daily - today.used),
        resetsAt: today.resetsAt,
        byNetwork: today.byNetwork ?? {},
      },
    };
  }

  private async lastUsed(rec: KeyRecord): Promise<string | null> {
    const minutes = await this.o.usage.minutes(rec.id);
    for (let i = minutes.length - 1; i >= 0; i--)
      if ((minutes[i] as MinuteUsage).calls > 0) return (minutes[i] as MinuteUsage).minute;
    const days = await this.o.usage.days(rec.id);
    for (let i = days.length - 1; i >= 0; i--) if ((days[i] as DayUsage).calls > 0) return (days[i] as DayUsage).day;
    return null;
  }

  async view(rec: KeyRecord): Promise<KeyView> {
    const base = limitsOf(this.o.config, rec);
    return {
      id: rec.id,
      name: rec.name ?? rec.label ?? '',
      prefix: rec.prefix ?? null,
      plan: rec.plan,
      status: rec.revokedAt === undefined ? 'active' : 'revoked',
      createdAt: rec.createdAt,
      revokedAt: rec.revokedAt ?? null,
      rotatedAt: rec.rotatedAt ?? null,
      lastUsed: await this.lastUsed(rec),
      networks: rec.networks ?? null,
      limits: {
        creditsPerDay: rec.limits?.creditsPerDay ?? null,
        creditsPerSecond: rec.limits?.creditsPerSecond ?? null,
      },
      planDailyCredits: base.daily,
      planCreditsPerSecond: base.perSecond,
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
