// `node-cli serve [--datadir ./data] [--host 127.0.0.1] [--port 8545] [--config <file>]
//  [--failover-url <url>] [--metrics-port <port>] [--ledger redis://host:port[/db]] [--ledger-failure open|closed]
//  [--follow <URL> [--genesis <genesis.json>] [--reorg-depth N] [--poll-ms N]]
//  [--network <name>=<datadir>[,follow=<URL>]]... [--default-network <name>] [--threads N|cores]`: JSON-RPC over
//  HTTP and WebSocket, one or several networks.
import { Option } from 'commander';
import type { Command } from 'commander';
import { serve } from './run.js';
import type { ServeOptions } from './run.js';

/** The serving options, declared once for `serve` and `start`. */
export function withServeOptions(cmd: Command): Command {
  return cmd
    .option('--datadir <dir>', 'datadir holding the imported chain, keys.json and usage/', './data')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', '8545')
    .option('--config <file>', 'server config (plans, limits); default <datadir>/server.json if present')
    .option(
      '--failover-url <url>',
      'partner JSON-RPC endpoint for eth_getBlockByHash of growth/custom keys during an outage',
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics on this port (config metricsHost, loopback by default); off unless given or configured',
    )
    .option(
      '--ledger <url>',
      'keys and credits shared by every replica in Redis: redis://host:port[/db] (default: embedded in the datadir)',
    )
    .option(
      '--ledger-failure <mode>',
      'while the Redis ledger is unreachable: open (serve, journal locally, replay later) or closed (refuse paid calls)',
      'open',
    )
    .option('--dashboard', 'serve the developer dashboard on the admin listener (--admin-host, --admin-port)')
    .option('--admin-host <host>', 'address of the admin listener (dashboard)', '127.0.0.1')
    .option('--admin-port <port>', 'port of the admin listener (implies --dashboard; 0: any free port)')
    .option('--admin-tls-cert <file>', 'PEM certificate: serve the dashboard over TLS (with --admin-tls-key)')
    .option('--admin-tls-key <file>', 'PEM private key of --admin-tls-cert')
    .option('--log-format <format>', 'json or text (default: text on a terminal, json otherwise)')
    .option('--log-level <level>', 'debug, info, warn, error or silent', 'info')
    .option('--access-log', 'log one record per call: method, key id (never the key), outcome, credits, duration')
    .option(
      '--threads <n>',
      "app threads serving the port, each with the store open and its own caches; credits exact across them, a follower's blocks reach all of them (default: one per core; 1: a single-thread server)",
    );
}

export function register(program: Command): void {
  withServeOptions(
    program
      .command('serve')
      .description('serve the imported chain: HTTP POST /v3/<API_KEY>, WebSocket /ws/v3/<API_KEY>, GET /health')
      .option(
        '--follow <URL>',
        'follow a live JSON-RPC upstream (http(s):// or ws(s)://) while serving; every block is verified before it is written',
      )
      .option('--genesis <file>', 'genesis.json of the followed chain (required for an empty datadir)')
      .option(
        '--ingest <mode>',
        "with --follow: execute (run every block with the EVM; the default) or replicate (verify the upstream's transactions, receipts and state changes against every root; also ,ingest= in --network)",
      )
      .option(
        '--start-block <N|head-K>',
        "with --follow and an empty datadir: join the chain at block N (or the upstream's head minus K); history from there on, state proven on demand from the upstream",
      )
      .option('--checkpoint <hash>', 'with --start-block: the hash the start block must have')
      .option(
        '--history-upstream <URL>',
        'with --follow, for a datadir that joined its chain at block N: answer history below N (blocks, transactions, receipts, logs, state) from this http(s):// upstream, verified by hash links down from N and by proofs (also ,history= in --network)',
      )
      .option(
        '--reorg-depth <n>',
        'deepest upstream reorg followed before the ingest stops (also for --network …,follow=)',
        '64',
      )
      .addOption(new Option('--poll-ms <ms>', 'upstream poll interval when caught up').default('1000').hideHelp()),
  )
    .option(
      '--network <name>=<datadir>[,follow=<URL>[,ingest=replicate][,history=<URL>]]',
      "serve this network, chosen by the request Host <name>.<anything> (repeatable; replaces the config's networks); --datadir then holds only keys, usage and config",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option(
      '--default-network <name>',
      'the network answering bare hosts (IP addresses, localhost); without it they get 404',
    )
    .action(async (opts: ServeOptions) => {
      await serve(opts);
    });
}
