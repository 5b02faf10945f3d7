// METRIC_FAMILIES is what the generated reference lists: every family the exposition writes must
// be in it with the same TYPE, HELP and label names, and every family in it must be written.
import { CUT_REASONS, LABEL_VALUES, METRIC_FAMILIES, Metrics, OUTCOMES } from '../src/index.js';
import type { MetricFamily, MetricName } from '../src/index.js';

/** A multi-network exposition with every kind of series, plus serve --threads' family. */
function exposition(): string {
  const net = new Metrics('mainnet');
  const routing = new Metrics(undefined, true);
  for (const outcome of OUTCOMES) net.call('eth_blockNumber', outcome, 0.001);
  net.charged('eth_blockNumber', 1);
  net.response('http', 200);
  net.response('ws', 101);
  net.ingest = () => ({
    state: 'following',
    upstream: 'http://upstream',
    upstreamHead: 10n,
    upstreamHeadTimestamp: 120n,
    localHead: 9n,
    localHeadTimestamp: 108n,
    lagBlocks: 1n,
    lagSeconds: 12,
    reorgs: 0,
    blocksImported: 9,
    lastError: undefined,
    lastErrorAt: undefined,
    firstBlock: 5n,
    stateDownload: { block: 5n, whole: true, nodes: 1939, codes: 39, bytes: 210_000 },
    provenState: { fetches: 3, verified: 2, rejected: 1, failed: 0, cold: 1 },
    historyUpstream: { origin: 'http://archive', fetches: 4, headers: 400, blocks: 2, rejected: 1, failed: 0 },
  });
  net.disk = { datadirBytes: 1_000_000, freeBytes: 9_000_000 };
  for (const reason of CUT_REASONS) routing.cuts.set(reason, 1);
  const single = new Metrics(); // the process-wide families of a server without networks
  single.cuts.set('queue', 1);
  single.ledger = { failure: 'open', degraded: true, journalCharges: 3 };
  return (
    Metrics.renderAll([net, routing]) + Metrics.renderAll([single]) + Metrics.renderThreadCalls([[0, [net.counts()]]])
  );
}

test('every family written is declared with its type, help and labels; every declared family is written', () => {
  const text = exposition();
  const seen = new Map<string, { type?: string; help?: string; labels: Set<string> }>();
  const family = (name: string) => {
    const f = seen.get(name) ?? { labels: new Set<string>() };
    seen.set(name, f);
    return f;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta !== null) {
      const f = family(meta[2] as string);
      if (meta[1] === 'HELP') f.help = meta[3] as string;
      else f.type = meta[3] as string;
      continue;
    }
    const sample = /^([a-z_]+?)(_bucket|_sum|_count)?(?:\{(.*)\})? \S+$/.exec(line);
    expect({ line, parsed: sample !== null }).toEqual({ line, parsed: true });
    const [, base, suffix, labels] = sample as RegExpExecArray;
    const name = suffix !== undefined && seen.has(base as string) ? (base as string) : `${base}${suffix ?? ''}`;
    for (const pair of (labels ?? '').split(',').filter((p) => p !== ''))
      family(name).labels.add(pair.slice(0, pair.indexOf('=')));
  }
  const declared = Object.entries(METRIC_FAMILIES) as [MetricName, MetricFamily][];
  expect([...seen.keys()].sort()).toEqual(declared.map(([name]) => name).sort());
  for (const [name, f] of declared) {
    const want = new Set<string>(f.labels);
    if (f.scope === 'network') want.add('network');
    if (f.type === 'histogram') want.add('le');
    const got = seen.get(name);
    expect({ name, type: got?.type, help: got?.help, labels: [...(got?.labels ?? [])].sort() }).toEqual({
      name,
      type: f.type,
      help: f.help,
      labels: [...want].sort(),
    });
  }
  // Declared label values are the ones written.
  expect(text).toContain('outcome="no_credits"');
  for (const reason of LABEL_VALUES.reason ?? []) expect(text).toContain(`reason="${reason}"`);
});
