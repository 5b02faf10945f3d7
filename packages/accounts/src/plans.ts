// Plans: each key's plan gives its daily credits and credits per second (the key may override
// either, and set its own lower limits: limits.ts). The server's configuration (`plans` in
// server.json) replaces figures of these defaults.

export const PLAN_NAMES = ['core', 'developer', 'team', 'growth', 'custom'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/** The figures of one plan (the server configuration's `plans.<name>`). */
export interface PlanConfig {
  /** Credits per UTC day (HTTP 402 beyond, until 00:00 UTC). */
  dailyCredits: number;
  /** Credits per second, a token bucket holding one second of credits (HTTP 429 beyond); 0: no limit. */
  creditsPerSecond: number;
  /** Whether eth_getBlockByHash may be forwarded to the failover partner. */
  failover: boolean;
}

/** What the limit computations need of a configuration (ServerConfig has it). */
export interface PlansOf {
  readonly plans: Readonly<Record<PlanName, Readonly<PlanConfig>>>;
}

/**
 * Default plans: core, developer and team as on Infura's pricing page; growth (legacy at Infura)
 * and custom are ours to set.
 */
export const DEFAULT_PLANS: Readonly<Record<PlanName, Readonly<PlanConfig>>> = {
  core: { dailyCredits: 3_000_000, creditsPerSecond: 500, failover: false },
  developer: { dailyCredits: 15_000_000, creditsPerSecond: 4_000, failover: false },
  team: { dailyCredits: 75_000_000, creditsPerSecond: 40_000, failover: false },
  growth: { dailyCredits: 200_000_000, creditsPerSecond: 20_000, failover: true },
  custom: { dailyCredits: 1_000_000_000, creditsPerSecond: 0, failover: true },
};
