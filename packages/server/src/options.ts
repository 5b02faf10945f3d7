// What startServer takes and gives back (server.ts), in a module of its own so the server's
// rooms (listener.ts, http.ts, ws.ts, health.ts, metrics-listener.ts) can name them without
// importing the server.
import type { ChainEvents, ChainStore } from '@chainnode/core';
import type { RpcServiceApi, SubscriptionHub } from '@chainnode/rpc';
import type { CreditLedger, KeyRegistry, KeyStore, UsageRecord } from '@chainnode/accounts';
import type { TransportConfig } from './config.js';
import type { AccessRecord } from './middleware.js';
import type { FollowReport, LedgerView, Metrics, MetricsCounts } from './metrics.js';
import type { NetworkRouter, NetworkRuntime } from './router.js';

export interface ServerOptions {
  /** One chain (the server answers every Host from it): `service` + `store`, or else `networks`. */
  service?: RpcServiceApi;
  /** For /health and the head-block gauge (the rpc service has its own reference). */
  store?: ChainStore;
  /** Several chains, chosen by the request's Host; the caller closes them after close(). */
  networks?: NetworkRuntime[];
  /** The network answering bare hosts (IP literals, `localhost`, no Host); none: those get 404. */
  defaultNetwork?: string;
  config: TransportConfig;
  host: string;
  port: number;
  failoverUrl?: string;
  /** Enables the metrics listener on this port (0: ephemeral), overriding config.metricsPort. */
  metricsPort?: number;
  /** Operational messages (never containing keys). */
  log?: (line: string) => void;
  /**
   * Where keys and credits live: an engine of @chainnode/accounts (openLedger: embedded in a
   * datadir, or Redis), wired by the caller. The caller keeps ownership: close() closes neither.
   */
  ledger: { keys: KeyStore; credits: CreditLedger };
  /** The per-key usage record of the same engine (the caller keeps ownership). */
  usage: UsageRecord;
  /**
   * Commits of a follower's ingest (serve --follow), published on this thread after the store's
   * caches dropped what each commit made stale: they drive eth_subscribe notifications. Without
   * it subscriptions are accepted and stay silent (a static chain has no new blocks).
   */
  chainEvents?: ChainEvents;
  /** State of a follower's ingest, for /health and the metrics (serve --follow). */
  ingestStatus?: () => FollowReport;
  /**
   * serve --threads: the counts of the process's other app threads (their metricsCounts()),
   * added to this server's own at /metrics, so the one metrics listener covers every thread.
   */
  peerMetrics?: () => Promise<PeerMetrics[]>;
  /** serve --threads: this app thread's index (thread 0 serves /metrics). */
  thread?: number;
  /** The access log (`--access-log`): one record per call; off when absent. */
  access?: (rec: AccessRecord) => void;
  /** The Redis ledger's state for its gauges, read at each scrape (absent: the embedded ledger). */
  ledgerStatus?: () => Promise<LedgerView | undefined>;
}

/** One server's metrics counts: per instance, '' for the unlabelled one, else the network's name. */
export type ThreadMetrics = [instance: string, counts: MetricsCounts][];

/** Another app thread's counts, with its index. */
export interface PeerMetrics {
  thread: number;
  metrics: ThreadMetrics;
}

export interface RunningServer {
  readonly port: number;
  /** Port of the metrics listener, when enabled. */
  readonly metricsPort: number | undefined;
  readonly metrics: Metrics;
  /** This server's metrics counts (serve --threads: what thread 0 adds to its own at /metrics). */
  metricsCounts(): ThreadMetrics;
  readonly router: NetworkRouter;
  /** The live key set, credit ledger and usage record (the dashboard reads them in-process). */
  readonly keys: KeyRegistry;
  readonly ledger: CreditLedger;
  readonly usage: UsageRecord;
  /** Every eth_subscribe subscription of this server (size, per-key counts). */
  readonly subscriptions: SubscriptionHub;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), closes WebSockets. */
  close(): Promise<void>;
}
