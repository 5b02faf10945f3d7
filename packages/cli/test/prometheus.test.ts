// A real Prometheus (Debian's) scraping a running `serve --threads 2 --ledger redis://…` with the
// files of deploy/prometheus: the exposition passes `promtool check metrics` and is scraped
// without error, every dashboard query (deploy/grafana/chainnode.json) and alert rule evaluates
// in it, the scraped series are the declared families, and the Redis ledger alert goes pending
// once Redis is stopped under a paid call. `promtool test rules` runs the rules' unit tests.
// Skips with one line when prometheus, promtool or redis-server is not installed.
import { spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  ALERT_RULES,
  ALERT_TESTS,
  alertExpressions,
  dashboardQueries,
  freePort,
  metricNames,
  missingTools,
  redisServerPath,
  startRedis,
  tempDir,
  toolPath,
} from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { METRIC_FAMILIES } from '@chainnode/server';
import type { MetricFamily } from '@chainnode/server';
import { createKeyCli, perTest, rpc, sleep, spawnServe, startService } from './serve-helpers.js';

const prometheus = toolPath('prometheus');
const promtool = toolPath('promtool');
const ready = prometheus !== undefined && promtool !== undefined && redisServerPath() !== undefined;
if (!ready) console.log(missingTools(['prometheus', 'redis-server']));
const maybe = ready ? test : test.skip;

const { cleanups, copy } = perTest();

async function startPrometheus(target: string): Promise<{ base: string; proc: ChildProcess }> {
  const tmp = await tempDir('chainnode-prometheus-');
  cleanups.push(tmp.cleanup);
  // deploy/prometheus/prometheus.yml with its targets replaced, next to a copy of the rules.
  const config = readFileSync(join(dirname(ALERT_RULES), 'prometheus.yml'), 'utf8').replace(
    /(- targets:\n)(\s+- \S+\n)+/,
    (_m, head: string) => `${head}          - ${target}\n`,
  );
  expect(config).toContain(`- ${target}`);
  writeFileSync(
    join(tmp.dir, 'prometheus.yml'),
    config.replace(/(scrape|evaluation)_interval: 15s/g, '$1_interval: 1s'),
  );
  writeFileSync(join(tmp.dir, 'alerts.yml'), readFileSync(ALERT_RULES));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await startService(
    'prometheus',
    prometheus as string,
    [
      `--config.file=${join(tmp.dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(tmp.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    cleanups,
    () =>
      fetch(`${base}/-/ready`).then(
        (r) => r.ok,
        () => false,
      ),
    600,
  );
  return { base, proc };
}

async function api<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
  return body.data;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

maybe('promtool: the unit tests of deploy/prometheus/alerts.yml pass', () => {
  const r = spawnSync(promtool as string, ['test', 'rules', ALERT_TESTS], { encoding: 'utf8' });
  expect(r.stdout + r.stderr).toContain('SUCCESS');
  expect(r.status).toBe(0);
});

maybe('Prometheus scrapes a node; every dashboard query and alert evaluates; the ledger alert fires', async () => {
  let redis: RedisProcess | undefined = await startRedis();
  cleanups.push(async () => {
    await redis?.stop('SIGKILL');
    await redis?.cleanup();
  });
  const dir = await copy();
  const { key } = await createKeyCli(dir, 'team', ['--ledger', redis.url]);
  const metricsPort = await freePort();
  const node = await spawnServe(dir, ['--threads', '2', '--ledger', redis.url, '--metrics-port', String(metricsPort)]);
  cleanups.push(() => node.stop('SIGKILL'));
  expect((await rpc(node.url(key), 'eth_blockNumber', [])).status).toBe(200);
  const head = BigInt((await rpc(node.url(key), 'eth_blockNumber', [])).body.result as string);

  // The exposition as Prometheus' own linter reads it.
  const exposition = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const lint = spawnSync(promtool as string, ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  expect({ status: lint.status, out: lint.stdout + lint.stderr }).toEqual({ status: 0, out: '' });

  const { base } = await startPrometheus(`127.0.0.1:${metricsPort}`);
  await until('a successful scrape', async () => {
    const t = await api<{ activeTargets: { health: string; lastError: string }[] }>(base, '/api/v1/targets');
    const target = t.activeTargets[0];
    return target?.health === 'up' && target.lastError === '' ? true : undefined;
  });
  const value = async (q: string): Promise<number | undefined> => {
    const r = await api<{ result: { value: [number, string] }[] }>(
      base,
      `/api/v1/query?query=${encodeURIComponent(q)}`,
    );
    return r.result[0] === undefined ? undefined : Number(r.result[0].value[1]);
  };
  expect(await until('the head block', () => value('chainnode_head_block'))).toBe(Number(head));
  expect(await until('calls counted', () => value('sum(chainnode_rpc_calls_total{method="eth_blockNumber"})'))).toBe(2);

  // Every series Prometheus holds is a declared family (or Prometheus' own per-target series).
  const names = await api<string[]>(base, '/api/v1/label/__name__/values');
  const families = Object.entries(METRIC_FAMILIES) as [string, MetricFamily][];
  const declared = (n: string): boolean =>
    families.some(
      ([f, m]) => n === f || (m.type === 'histogram' && ['_bucket', '_sum', '_count'].some((s) => n === f + s)),
    );
  const own = /^(up|scrape_.*|ALERTS.*)$/;
  expect(names.filter((n) => !own.test(n) && !declared(n))).toEqual([]);
  // Every family this node writes (all but a follower's) is scraped.
  const scraped = new Set(names);
  expect(
    families
      .filter(([f, m]) => m.written !== 'follow' && !scraped.has(f) && !scraped.has(`${f}_count`))
      .map(([f]) => f),
  ).toEqual([]);

  // Every dashboard query and alert expression parses and evaluates in this Prometheus.
  const grafana = (q: string): string => q.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*');
  for (const { panel, expr } of dashboardQueries()) {
    const ok = await api(base, `/api/v1/query?query=${encodeURIComponent(grafana(expr))}`).then(
      () => true,
      (e: Error) => e.message,
    );
    expect({ panel, ok }).toEqual({ panel, ok: true });
    for (const n of metricNames(expr))
      expect({ panel, n, known: n === 'up' || declared(n) }).toEqual({ panel, n, known: true });
  }
  for (const { alert, expr } of alertExpressions()) {
    const ok = await api(base, `/api/v1/query?query=${encodeURIComponent(expr)}`).then(
      () => true,
      (e: Error) => e.message,
    );
    expect({ alert, ok }).toEqual({ alert, ok: true });
  }
  const rules = await api<{ groups: { rules: { name: string; health: string }[] }[] }>(base, '/api/v1/rules');
  const loaded = rules.groups.flatMap((g) => g.rules);
  expect(loaded.map((r) => r.name).sort()).toEqual(
    alertExpressions()
      .map((a) => a.alert)
      .sort(),
  );
  await until('every rule evaluated', async () => {
    const r = await api<{ groups: { rules: { health: string }[] }[] }>(base, '/api/v1/rules');
    return r.groups.flatMap((g) => g.rules).every((x) => x.health === 'ok') ? true : undefined;
  });
  expect(await value('chainnode_ledger_degraded{failure="open"}')).toBe(0);

  // Redis goes away under a paid call: the replica serves fail-open and the alert goes pending.
  await redis.stop('SIGKILL');
  await redis.cleanup();
  redis = undefined;
  expect((await rpc(node.url(key), 'eth_blockNumber', [])).status).toBe(200);
  await until('chainnode_ledger_degraded 1', async () =>
    (await value('chainnode_ledger_degraded{failure="open"}')) === 1 ? true : undefined,
  );
  const alert = await until('the ChainnodeLedgerFailOpen alert', async () => {
    const a = await api<{ alerts: { labels: Record<string, string>; state: string }[] }>(base, '/api/v1/alerts');
    return a.alerts.find((x) => x.labels['alertname'] === 'ChainnodeLedgerFailOpen');
  });
  expect(alert.state).toBe('pending');
  expect(await value('chainnode_ledger_journal_charges')).toBeGreaterThanOrEqual(1);
});
