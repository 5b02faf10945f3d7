// The monitoring files of deploy/ as the tests read them: every PromQL query of the Grafana
// dashboard (deploy/grafana/chainnode.json) and every alert expression (deploy/prometheus/
// alerts.yml), and the metric names a query reads.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// this file: <repo>/packages/testkit/dist/src/monitoring.js
const DEPLOY = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'deploy');
export const DASHBOARD = join(DEPLOY, 'grafana', 'chainnode.json');
export const ALERT_RULES = join(DEPLOY, 'prometheus', 'alerts.yml');
export const ALERT_TESTS = join(DEPLOY, 'prometheus', 'alerts.test.yml');

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** Every query of the dashboard, with its panel's title. */
export function dashboardQueries(): { panel: string; expr: string }[] {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const out: { panel: string; expr: string }[] = [];
  const walk = (ps: Panel[]): void => {
    for (const p of ps) {
      for (const t of p.targets ?? []) if (t.expr !== undefined) out.push({ panel: p.title ?? '', expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(d.panels);
  return out;
}

/** Every alert of alerts.yml with its expression (`expr: ...` or a `|` block below it). */
export function alertExpressions(): { alert: string; expr: string }[] {
  const lines = readFileSync(ALERT_RULES, 'utf8').split('\n');
  const out: { alert: string; expr: string }[] = [];
  let alert = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const a = /^\s*- alert:\s*(\S+)\s*$/.exec(line);
    if (a !== null) alert = a[1] as string;
    const e = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (e === null) continue;
    if (e[2] !== '|') {
      out.push({ alert, expr: e[2] as string });
      continue;
    }
    const indent = (e[1] as string).length;
    const indentOf = (l: string): number => l.length - l.trimStart().length;
    const body: string[] = [];
    while (i + 1 < lines.length && indentOf(lines[i + 1] as string) > indent) body.push((lines[++i] as string).trim());
    out.push({ alert, expr: body.join(' ') });
  }
  return out;
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'bool',
  'group_left',
  'group_right',
  'offset',
]);

/**
 * The metric names a PromQL query reads: identifiers outside strings, label matchers and grouping
 * clauses that are not functions, keywords, numbers or durations. Grafana's variables
 * ($__rate_interval, $instance) sit inside brackets and quotes, which are dropped.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const id = m[0];
    const after = bare.slice((m.index ?? 0) + id.length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(id)) continue;
    if (/^\d/.test(bare[(m.index ?? 0) - 1] ?? '')) continue; // the unit of a number (1e9, 5m)
    names.add(id);
  }
  return [...names];
}
