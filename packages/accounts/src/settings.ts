// @chainnode/accounts/settings: what the runtime's settings declare and check about keys and the
// ledger (the plans and their defaults, network names, a --ledger URL), without the key stores and
// ledger engines: a command that only reads or checks settings (`sync`, `db`, `--help`) loads
// these modules, not the rest of accounts.
export { DEFAULT_PLANS, PLAN_NAMES, isPlanName } from './plans.js';
export type { PlanConfig, PlanName, PlansOf } from './plans.js';
export { NETWORK_NAME_RE, networkNameProblem } from './keys/network-name.js';
export { parseRedisUrl } from './redis-client.js';
export type { LedgerFailureMode } from './ledger/api.js';
