// What the server takes of the process's settings: the transport's limits and budgets, its
// listeners' options and the plans its gate applies. Each is a field of the settings schema
// (@chainnode/runtime's settings/fields.ts), which documents it and takes its default from here,
// as the rpc service's settings take theirs from DEFAULT_RPC_CONFIG.
import { DEFAULT_PLANS } from '@chainnode/accounts/settings';
import type { PlanConfig, PlanName } from '@chainnode/accounts/settings';

/** The server's settings (see the settings schema for what each means). */
export interface TransportConfig {
  plans: Record<PlanName, PlanConfig>;
  maxBodyBytes: number;
  wsMaxPayloadBytes: number;
  wsMaxBackpressureBytes: number;
  wsMaxQueuedMessages: number;
  wsMaxQueuedBytes: number;
  wsSlowReaderTimeoutSeconds: number;
  maxReplyBytesInFlight: number;
  wsIdleTimeoutSeconds: number;
  corsOrigins: string[];
  failoverTimeoutMs: number;
  metricsHost: string;
  /** 0: no metrics listener (ServerOptions.metricsPort overrides it). */
  metricsPort: number;
  shutdownGraceMs: number;
  subscriptionsPerConnection: number;
  subscriptionsPerKey: number;
  wsMaxUnsentNotificationBytes: number;
}

const MIB = 1024 * 1024;

/** The defaults of the server's settings. */
export const DEFAULT_TRANSPORT_CONFIG: Readonly<TransportConfig> = Object.freeze({
  plans: DEFAULT_PLANS as Record<PlanName, PlanConfig>,
  maxBodyBytes: MIB,
  wsMaxPayloadBytes: MIB,
  wsMaxBackpressureBytes: 4 * MIB,
  wsMaxQueuedMessages: 1024,
  wsMaxQueuedBytes: MIB,
  wsSlowReaderTimeoutSeconds: 30,
  maxReplyBytesInFlight: 128 * MIB,
  wsIdleTimeoutSeconds: 120,
  corsOrigins: ['*'],
  failoverTimeoutMs: 2_000,
  metricsHost: '127.0.0.1',
  metricsPort: 0,
  shutdownGraceMs: 10_000,
  subscriptionsPerConnection: 100,
  subscriptionsPerKey: 1000,
  wsMaxUnsentNotificationBytes: 4 * MIB,
});

/** The defaults with `overrides` (a caller that builds the server in code: tests, benches). */
export function transportConfig(overrides: Partial<TransportConfig> = {}): TransportConfig {
  return { ...structuredClone(DEFAULT_TRANSPORT_CONFIG), ...overrides };
}
