// The developer dashboard: key management (one module behind the web page and `node-cli keys`),
// the admin token and sessions, and the admin listener serving the page and its JSON API.
export { KeyActionError, KeyManager, MAX_NAME_LENGTH, MAX_NETWORKS } from './keyring.js';
export type { CreateInput, KeyManagerOptions, KeyUsage, KeyView, UpdateInput } from './keyring.js';
export {
  ADMIN_FILE,
  AdminTokenError,
  CSRF_HEADER,
  LoginThrottle,
  SESSION_COOKIE,
  Sessions,
  createAdminToken,
  hasAdminToken,
  sameOrigin,
  verifyAdminToken,
} from './admin.js';
export { startDashboard } from './http.js';
export type { DashboardOptions, RunningDashboard } from './http.js';
