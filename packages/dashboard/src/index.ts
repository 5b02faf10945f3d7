// The developer dashboard: the admin token and sessions, and the admin listener serving the page
// and its JSON API over the key manager of @chainnode/accounts (the one module behind the page,
// `node-cli keys` and `node-cli start`).
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
