// What `serve` prints on stdout once everything listens: where to send calls, health, metrics,
// the dashboard, what is followed, and each network's URLs. Never a key.
import { redactUrl } from '@chainnode/core';
import { hostForUrl } from '@chainnode/runtime';
import type { Listening, RuntimeConfig } from '@chainnode/runtime';

/** Prints the banner; returns the host as it stands in URLs. */
export function printBanner(config: RuntimeConfig, l: Listening): string {
  const host = hostForUrl(config.host);
  const out = (line: string): void => {
    process.stdout.write(`serve: ${line}\n`);
  };
  const threads = config.threads;
  out(
    `ledger    ${l.ledger === 'redis' ? `redis (shared; when unreachable: fail-${config.ledger.failure})` : `embedded (${config.datadir})`}`,
  );
  out(`listening on ${host}:${l.port}${threads > 1 ? ` (${threads} threads)` : ''}`);
  out(`HTTP      POST http://${host}:${l.port}/v3/<API_KEY>`);
  out(`WebSocket      ws://${host}:${l.port}/ws/v3/<API_KEY>`);
  out(`health    GET  http://${host}:${l.port}/health`);
  if (l.metricsPort !== undefined)
    out(
      `metrics   GET  http://${config.server.metricsHost}:${l.metricsPort}/metrics${threads > 1 ? ' (all threads)' : ''}`,
    );
  if (config.failoverUrl !== undefined)
    out('failover partner configured for eth_getBlockByHash (growth, custom plans)');
  if (l.dashboardUrl !== undefined) out(`dashboard ${l.dashboardUrl}`);
  const own = config.networks.length === 0 ? config.follows[0] : undefined;
  if (own !== undefined) out(`following ${redactUrl(own.follow.url)} (reorg depth ${own.follow.reorgDepth})`);
  if (config.networks.length > 0) {
    // *.localhost names the loopback in browsers and curl; elsewhere use DNS names whose first label is the network.
    const shown =
      config.host === '127.0.0.1' || config.host === '::1' || config.host === 'localhost' ? 'localhost' : host;
    for (const n of config.networks) {
      const dflt = `${n.name === config.defaultNetwork ? ' (default: also bare hosts)' : ''}${n.follow !== undefined ? ` following ${redactUrl(n.follow)}` : ''}`;
      out(
        `network ${n.name.padEnd(10)} http://${n.name}.${shown}:${l.port}/v3/<API_KEY>  ws://${n.name}.${shown}:${l.port}/ws/v3/<API_KEY>  ${n.datadir}${dflt}`,
      );
    }
    out(`keys and usage (one account across networks) in ${config.datadir}`);
  }
  return host;
}
