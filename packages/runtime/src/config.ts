// What the serve runtime is started with: every setting already checked and typed. The CLI builds
// it from its flags and the config file (flag > file > default); nothing in this package parses
// text. It crosses into each app thread as worker data, so it holds plain data only.
import type { FollowSettings } from '@chainnode/ingest';
import type { ServerConfig } from './settings/file.js';

/** A datadir to follow and how: `network` is the network's name, '' for the one network of --datadir. */
export interface FollowedDatadir {
  network: string;
  datadir: string;
  follow: FollowSettings;
}

/** The admin listener serving the dashboard (`adminHost`, `adminPort`). */
export interface DashboardConfig {
  host: ServerConfig['adminHost'];
  port: NonNullable<ServerConfig['adminPort']>;
  /** PEM certificate and key (their contents): the dashboard over TLS. */
  tls?: { cert: string; key: string };
}

/**
 * The settings as the runtime takes them. Each member's type is its setting's in SERVER_FIELDS
 * (through ServerConfig, the schema's parsed values), resolved where the runtime needs one value:
 * `threads` a number ("cores" counted), `logFormat` chosen, optional settings absent when unset.
 */
export interface RuntimeConfig extends Pick<ServerConfig, 'host' | 'port' | 'networks'> {
  /** Keys, usage and the config file; also the served chain when `networks` is empty. */
  datadir: string;
  /** The config file's settings (plans, limits, budgets, networks as the file gave them), checked. */
  server: ServerConfig;
  /** The metrics listener (on `server.metricsHost`); absent: none. */
  metricsPort?: ServerConfig['metricsPort'];
  /** Partner endpoint for eth_getBlockByHash of failover-plan keys. */
  failoverUrl?: NonNullable<ServerConfig['failoverUrl']>;
  /** The network answering bare hosts (one of `networks`). */
  defaultNetwork?: NonNullable<ServerConfig['defaultNetwork']>;
  /** The datadirs followed while serving, each by one ingest thread. */
  follows: FollowedDatadir[];
  /** Keys and credits: embedded in `datadir`, or shared through Redis at `url`. */
  ledger: { url?: NonNullable<ServerConfig['ledger']>; failure: ServerConfig['ledgerFailure'] };
  /** The dashboard on the admin listener; absent: none. */
  dashboard?: DashboardConfig;
  log: {
    format: NonNullable<ServerConfig['logFormat']>;
    level: ServerConfig['logLevel'];
    access: ServerConfig['accessLog'];
  };
  /** App threads on the port; 1: everything on the main thread. */
  threads: Exclude<ServerConfig['threads'], 'cores'>;
}

/** Every datadir `config` serves: `datadir`'s chain, or each network's. */
export function servedDatadirs(config: RuntimeConfig): string[] {
  return config.networks.length === 0 ? [config.datadir] : config.networks.map((n) => n.datadir);
}

/**
 * A failure to start that the operator can act on (a datadir in use or missing, a dashboard that
 * cannot bind, an unreachable ledger): the CLI prints its message as one line, without a stack.
 */
export class RuntimeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RuntimeError';
  }
}
