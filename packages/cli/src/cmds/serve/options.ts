// The options of `serve` (and `start`) as commander hands them over (with the config file's
// values for flags not given): config.ts turns them into the runtime's RuntimeConfig.
export interface ServeOptions {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string | undefined;
  /** `--network <name>=<datadir>[,follow=<URL>]`, repeatable. */
  network?: string[];
  /** `--default-network <name>`: the network answering bare hosts. */
  defaultNetwork?: string;
  /** redis://host:port[/db]: keys and credits shared through Redis; default the embedded ledger. */
  ledger?: string;
  ledgerFailure?: string;
  dashboard?: boolean;
  adminHost?: string;
  adminPort?: string;
  adminTlsCert?: string;
  adminTlsKey?: string;
  /** serve --follow <URL>: follow a live upstream while serving. */
  follow?: string;
  genesis?: string;
  /** --ingest execute|replicate (with --follow). */
  ingest?: string;
  /** --start-block <N|head-K> and --checkpoint <hash> (with --follow): join the chain there. */
  startBlock?: string;
  checkpoint?: string;
  /** --history-upstream <URL> (with --follow): history below a joined datadir's first block. */
  historyUpstream?: string;
  reorgDepth?: string;
  pollMs?: string;
  /** `--log-format json|text` (default: text on a terminal, json otherwise). */
  logFormat?: string;
  /** `--log-level debug|info|warn|error|silent` (default info). */
  logLevel?: string;
  /** `--access-log`: one log record per call (method, key id, outcome, credits, duration). */
  accessLog?: boolean;
  /** App threads on the port (default and `cores`: one per core; 1: the single-thread server). */
  threads?: string;
}
