// What `serve` prints on stdout once everything listens: where to send calls, health, metrics,
// the dashboard, what is followed, and each network's URLs. Never a key. In the text log format,
// `serve: …` lines; in JSON, one `info` line of the log's format with the same facts as fields
// (docs/monitoring.md#logs), so that every line the process writes is JSON.
import { redactUrl } from '@chainnode/core';
import { hostForUrl } from '@chainnode/runtime';
import type { Listening, RuntimeConfig } from '@chainnode/runtime';
import { createLog } from '@chainnode/server';
import type { LogFields, LogValue } from '@chainnode/server';

/** A notice on stdout: its text lines, or one JSON line of `msg` and `fields` (the log's format). */
export function announce(config: RuntimeConfig, lines: readonly string[], msg: string, fields: LogFields): void {
  if (config.log.format === 'json') {
    // Written whatever --log-level: as the text lines are.
    createLog({ format: 'json', level: 'info' }, (line) => process.stdout.write(line)).record(msg, fields);
    return;
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Prints the banner; returns the host as it stands in URLs. */
export function printBanner(config: RuntimeConfig, l: Listening): string {
  const host = hostForUrl(config.host);
  const { lines, fields } = banner(config, l, host);
  announce(
    config,
    lines.map((line) => `serve: ${line}`),
    `listening on ${host}:${l.port}`,
    fields,
  );
  return host;
}

/** The banner's text lines and the same facts as the fields of one log line. */
function banner(config: RuntimeConfig, l: Listening, host: string): { lines: string[]; fields: LogFields } {
  const lines: string[] = [];
  const fields: Record<string, LogValue> = { host, port: l.port, threads: config.threads };
  const threads = config.threads;
  const base = `http://${host}:${l.port}`;
  fields.ledger = l.ledger;
  if (l.ledger === 'redis') fields.ledgerFailure = config.ledger.failure;
  fields.datadir = config.datadir;
  lines.push(
    `ledger    ${l.ledger === 'redis' ? `redis (shared; when unreachable: fail-${config.ledger.failure})` : `embedded (${config.datadir})`}`,
  );
  lines.push(`listening on ${host}:${l.port}${threads > 1 ? ` (${threads} threads)` : ''}`);
  lines.push(`HTTP      POST ${base}/v3/<API_KEY>`);
  lines.push(`WebSocket      ws://${host}:${l.port}/ws/v3/<API_KEY>`);
  lines.push(`health    GET  ${base}/health`);
  // The URLs end where the API key goes.
  fields.http = `${base}/v3/`;
  fields.ws = `ws://${host}:${l.port}/ws/v3/`;
  fields.health = `${base}/health`;
  if (l.metricsPort !== undefined) {
    fields.metrics = `http://${config.server.metricsHost}:${l.metricsPort}/metrics`;
    lines.push(`metrics   GET  ${fields.metrics}${threads > 1 ? ' (all threads)' : ''}`);
  }
  if (config.failoverUrl !== undefined) {
    fields.failover = true;
    lines.push('failover partner configured for eth_getBlockByHash (growth, custom plans)');
  }
  if (l.dashboardUrl !== undefined) {
    fields.dashboard = l.dashboardUrl;
    lines.push(`dashboard ${l.dashboardUrl}`);
  }
  const own = config.networks.length === 0 ? config.follows[0] : undefined;
  if (own !== undefined) {
    fields.following = redactUrl(own.follow.url);
    fields.reorgDepth = Number(own.follow.reorgDepth);
    lines.push(`following ${fields.following} (reorg depth ${own.follow.reorgDepth})`);
  }
  if (config.networks.length > 0) {
    const networks = networkLines(config, l, host);
    lines.push(...networks.lines, `keys and usage (one account across networks) in ${config.datadir}`);
    fields.networks = networks.fields;
  }
  return { lines, fields };
}

/** Each network's URLs (by its Host name) and datadir. */
function networkLines(config: RuntimeConfig, l: Listening, host: string): { lines: string[]; fields: LogValue[] } {
  // *.localhost names the loopback in browsers and curl; elsewhere use DNS names whose first label is the network.
  const shown =
    config.host === '127.0.0.1' || config.host === '::1' || config.host === 'localhost' ? 'localhost' : host;
  const lines: string[] = [];
  const fields: LogValue[] = [];
  for (const n of config.networks) {
    const http = `http://${n.name}.${shown}:${l.port}/v3/`;
    const ws = `ws://${n.name}.${shown}:${l.port}/ws/v3/`;
    const isDefault = n.name === config.defaultNetwork;
    const following = n.follow !== undefined ? redactUrl(n.follow) : undefined;
    const dflt = `${isDefault ? ' (default: also bare hosts)' : ''}${following !== undefined ? ` following ${following}` : ''}`;
    lines.push(`network ${n.name.padEnd(10)} ${http}<API_KEY>  ${ws}<API_KEY>  ${n.datadir}${dflt}`);
    fields.push({
      name: n.name,
      http,
      ws,
      datadir: n.datadir,
      default: isDefault,
      ...(following !== undefined ? { following } : {}),
    });
  }
  return { lines, fields };
}
