// deploy/grafana/chainnode.json and deploy/prometheus/alerts.yml read only metrics the node
// exposes: every metric name in every query is a family of METRIC_FAMILIES (a histogram's
// _bucket/_sum/_count series included) or Prometheus' own `up`, and the dashboard shows every
// family. (packages/cli/test/prometheus.test.ts runs the same queries in a real Prometheus.)
import { alertExpressions, dashboardQueries, metricNames } from '@chainnode/testkit';
import { METRIC_FAMILIES } from '../src/index.js';
import type { MetricFamily } from '../src/index.js';

/** Every series name the node writes, each with its family. */
function seriesNames(): Map<string, string> {
  const out = new Map<string, string>([['up', 'up']]);
  for (const [name, f] of Object.entries(METRIC_FAMILIES) as [string, MetricFamily][]) {
    if (f.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.set(`${name}${s}`, name);
    else out.set(name, name);
  }
  return out;
}

test('metricNames finds the metrics of a query and nothing else', () => {
  expect(
    metricNames(
      'sum by (instance) (rate(a_total{x=~"5..",y="$i"}[$__rate_interval])) / ignoring(z) b_total > 1e9 and on (q) time() - c < 5',
    ).sort(),
  ).toEqual(['a_total', 'b_total', 'c']);
});

test('every dashboard query reads exposed metrics; every family is on the dashboard', () => {
  const known = seriesNames();
  const queries = dashboardQueries();
  expect(queries.length).toBeGreaterThan(15);
  const shown = new Set<string>();
  for (const q of queries) {
    const names = metricNames(q.expr);
    expect({ panel: q.panel, names: names.length > 0 }).toEqual({ panel: q.panel, names: true });
    for (const n of names) {
      expect({ panel: q.panel, metric: n, exposed: known.has(n) }).toEqual({
        panel: q.panel,
        metric: n,
        exposed: true,
      });
      shown.add(known.get(n) as string);
    }
  }
  expect(Object.keys(METRIC_FAMILIES).filter((f) => !shown.has(f))).toEqual([]);
});

test('every alert expression reads exposed metrics', () => {
  const known = seriesNames();
  const alerts = alertExpressions();
  expect(alerts.map((a) => a.alert)).toEqual(
    expect.arrayContaining([
      'ChainnodeFollowLag',
      'ChainnodeUpstreamDown',
      'ChainnodeLedgerFailOpen',
      'Chainnode5xxRate',
      'ChainnodeGetLogsShedding',
      'ChainnodeDiskFullSoon',
    ]),
  );
  for (const a of alerts) {
    const names = metricNames(a.expr);
    expect(names.length).toBeGreaterThan(0);
    for (const n of names)
      expect({ alert: a.alert, metric: n, exposed: known.has(n) }).toEqual({
        alert: a.alert,
        metric: n,
        exposed: true,
      });
  }
});
