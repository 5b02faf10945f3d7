// The routing rules of NetworkRouter (Host -> network), the per-network metrics exposition and
// the journal's per-network split, in isolation. The end-to-end test with two real chains in one
// process is packages/cli/test/networks.test.ts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedLedger, readUsage, readUsageByNetwork, utcDay } from '@chainnode/accounts';
import type { Limits } from '@chainnode/accounts';
import { Metrics } from '../src/metrics.js';
import { NetworkRouter, NetworkRuntime, hostLabel } from '../src/router.js';
import { fakeService, fakeStore } from './helpers.js';

function runtime(name: string, implicit = false): NetworkRuntime {
  const store = fakeStore(3);
  return new NetworkRuntime({ name, store, service: fakeService(store), implicit });
}

test('hostLabel: the first DNS label, lowercased; bare for IP literals, single labels and no Host', () => {
  expect(hostLabel('mainnet.localhost:8545')).toBe('mainnet');
  expect(hostLabel('Sepolia.Example.COM')).toBe('sepolia');
  expect(hostLabel('mainnet.example.')).toBe('mainnet');
  for (const bare of ['localhost:8545', 'localhost', '127.0.0.1:8545', '10.1.2.3', '[::1]:8545', '', 'myhost'])
    expect(hostLabel(bare)).toBeUndefined();
});

test('NetworkRouter: by first label, default only for bare hosts, unknown -> undefined; one implicit network answers every Host', () => {
  const a = runtime('mainnet');
  const b = runtime('sepolia');
  const r = new NetworkRouter([a, b]);
  expect(r.route('mainnet.localhost:1')).toBe(a);
  expect(r.route('sepolia.rpc.example.com')).toBe(b);
  expect(r.route('mainnt.localhost')).toBeUndefined();
  expect(r.route('127.0.0.1:1')).toBeUndefined();
  const d = new NetworkRouter([a, b], { defaultNetwork: 'sepolia' });
  expect(d.route('127.0.0.1:1')).toBe(b);
  expect(d.route('localhost')).toBe(b);
  expect(d.route('mainnet.localhost')).toBe(a);
  expect(d.route('typo.localhost')).toBeUndefined(); // never silently another chain
  expect(NetworkRouter.askedFor('typo.localhost:1')).toBe('typo');
  expect(NetworkRouter.askedFor('"><script>.x')).toBe('(invalid host)');
  expect(() => new NetworkRouter([a, runtime('mainnet')])).toThrow('configured twice');
  expect(() => new NetworkRouter([a], { defaultNetwork: 'x' })).toThrow('not among the networks');
  const one = runtime('default', true);
  const s = new NetworkRouter([one]);
  expect(s.single).toBe(true);
  for (const h of ['mainnet.localhost', '127.0.0.1', 'anything.example.com', '']) expect(s.route(h)).toBe(one);
  expect(() => new NetworkRouter([one, a])).toThrow('cannot be combined');
  expect(() => runtime('Bad_Name')).toThrow('network name');
});

test('NetworkRouter.health: ok / degraded / unavailable / stopping; the state trie window', async () => {
  const ok = runtime('a');
  const broken = fakeStore(3);
  broken.head = () => Promise.reject(new Error('disk'));
  const bad = new NetworkRuntime({ name: 'b', store: broken, service: fakeService(broken) });
  expect(await new NetworkRouter([ok]).health(false)).toEqual({
    ok: true,
    body: { status: 'ok', networks: { a: { status: 'ok', head: '0x2', number: 2 } } },
  });
  expect((await new NetworkRouter([ok, bad]).health(false)).body['status']).toBe('degraded');
  expect((await new NetworkRouter([ok, bad]).health(false)).ok).toBe(true);
  expect(await new NetworkRouter([bad]).health(false)).toEqual({
    ok: false,
    body: { status: 'unavailable', networks: { b: { status: 'store unavailable' } } },
  });
  expect(await new NetworkRouter([ok]).health(true)).toMatchObject({ ok: false, body: { status: 'stopping' } });
  expect(bad.metrics.headBlock).toBe(-1);
  // A store with a state trie window shows it: its blocks and the block its trie is complete from.
  const windowed = fakeStore(3);
  windowed.stateTrie = () => ({ mode: 'window', blocks: 128, trieFrom: 7n });
  expect(await new NetworkRuntime({ name: 'w', store: windowed, service: fakeService(windowed) }).health()).toEqual({
    status: 'ok',
    head: '0x2',
    number: 2,
    stateTrie: { mode: 'window', blocks: 128, trieFrom: 7 },
  });
});

test('Metrics.renderAll: one HELP/TYPE per family, a network label per network, unlabelled process series', () => {
  const proc = new Metrics(undefined, true);
  const a = new Metrics('mainnet');
  const b = new Metrics('sepolia');
  a.call('eth_blockNumber', 'ok', 0.001);
  a.charged('eth_blockNumber', 10);
  b.call('eth_blockNumber', 'error', 0.002);
  b.response('http', 403);
  proc.response('http', 404);
  a.headBlock = 7;
  const text = Metrics.renderAll([proc, a, b]);
  expect(text.match(/^# TYPE chainnode_rpc_calls_total counter$/gm)).toHaveLength(1);
  expect(text).toContain('chainnode_rpc_calls_total{network="mainnet",method="eth_blockNumber",outcome="ok"} 1');
  expect(text).toContain('chainnode_rpc_calls_total{network="sepolia",method="eth_blockNumber",outcome="error"} 1');
  expect(text).toContain('chainnode_credits_charged_total{network="mainnet",method="eth_blockNumber"} 10');
  expect(text).toContain('chainnode_rpc_call_duration_seconds_count{network="sepolia",method="eth_blockNumber"} 1');
  expect(text).toContain('chainnode_responses_total{network="sepolia",transport="http",status="403"} 1');
  expect(text).toContain('chainnode_responses_total{transport="http",status="404"} 1');
  expect(text).toContain('chainnode_head_block{network="mainnet"} 7');
  expect(text).toContain('chainnode_head_block{network="sepolia"} -1');
  expect(text).not.toMatch(/^chainnode_head_block -?\d/m); // the routing instance has no head of its own
  // Every sample line belongs to the family announced last before it.
  let family = '';
  for (const line of text.trim().split('\n')) {
    const m = /^# TYPE (\S+)/.exec(line);
    if (m) family = m[1] as string;
    else if (!line.startsWith('#')) expect(line.startsWith(family)).toBe(true);
  }
  // A single-network server's exposition is unchanged: no label.
  const single = new Metrics();
  single.headBlock = 3;
  expect(single.render()).toContain('chainnode_head_block 3');
});

test('ledger: one balance across networks, the journal split by network; old lines still count', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chainnode-ledger-'));
  try {
    const ledger = new EmbeddedLedger(dir);
    const hash = 'ab'.repeat(32);
    const limits: Limits = { daily: 100, perSecond: 0 };
    const r1 = await ledger.debit(hash, 30, limits, 'mainnet');
    const r2 = await ledger.debit(hash, 50, limits, 'sepolia');
    expect((await ledger.debit(hash, 30, limits, 'mainnet')).ok).toBe(false); // 80 + 30 > 100: one balance
    const r3 = await ledger.debit(hash, 20, limits);
    if (!r1.ok || !r2.ok || !r3.ok) throw new Error('refused');
    await Promise.all([ledger.settle(r1.debit, 30), ledger.settle(r2.debit, 50), ledger.settle(r3.debit, 20)]);
    expect((await ledger.usage(hash)).byNetwork).toEqual({ '': 20, mainnet: 30, sepolia: 50 });
    await ledger.close();
    const day = utcDay(Date.now());
    const text = readFileSync(join(dir, 'usage', `${day}.log`), 'utf8');
    expect(text.split('\n').filter(Boolean).sort()).toEqual([`${hash} 20`, `${hash} 30 mainnet`, `${hash} 50 sepolia`]);
    expect(readUsage(dir, day).get(hash)).toBe(100);
    expect(Object.fromEntries(readUsageByNetwork(dir, day).get(hash) ?? [])).toEqual({
      '': 20,
      mainnet: 30,
      sepolia: 50,
    });
    // A restart sees the whole balance used.
    const again = new EmbeddedLedger(dir);
    expect((await again.debit(hash, 1, limits, 'sepolia')).ok).toBe(false);
    expect(await again.usage(hash)).toMatchObject({ used: 100, byNetwork: { '': 20, mainnet: 30, sepolia: 50 } });
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("Metrics.sum (serve --threads): two threads' counts render exactly as one instance that saw every event; shared gauges are the receiver's", () => {
  const events = (m: Metrics, k: number): void => {
    for (let i = 0; i < 5 + k; i++) m.call('eth_blockNumber', i % 3 === 0 ? 'no_credits' : 'ok', (i + k) * 0.0007);
    m.call(`eth_only${k}`, 'error', 0.3 * k);
    m.charged('eth_blockNumber', 10 * (k + 1));
    m.response('http', 200);
    m.response(k === 0 ? 'http' : 'ws', k === 0 ? 402 : 101);
    m.cuts.set('slow_reader', (m.cuts.get('slow_reader') ?? 0) + k + 1);
    m.wsOpen += k + 2;
    m.replyBytesInFlight += 100 * (k + 1);
  };
  const t0 = new Metrics();
  const t1 = new Metrics();
  const one = new Metrics();
  events(t0, 0);
  events(t1, 1);
  events(one, 0);
  events(one, 1);
  // Live subscriptions are read from each thread's hub at render: summed over threads.
  t0.subscriptions = () => ({ newHeads: 1, logs: 2, newPendingTransactions: 0 });
  t1.subscriptions = () => ({ newHeads: 1, logs: 0, newPendingTransactions: 3 });
  one.subscriptions = () => ({ newHeads: 2, logs: 2, newPendingTransactions: 3 });
  t0.headBlock = one.headBlock = 42;
  t1.headBlock = 7; // another thread's head gauge is not added
  const summed = t0.sum([structuredClone(t1.counts())]);
  expect(summed.render()).toBe(one.render());
  expect(summed.render()).toContain('\nchainnode_head_block 42\n');
  expect(summed.render()).toContain('\nchainnode_websocket_connections 5\n');
  expect(summed.render()).toContain(
    '\nchainnode_subscriptions{kind="newHeads"} 2\nchainnode_subscriptions{kind="logs"} 2\nchainnode_subscriptions{kind="newPendingTransactions"} 3\n',
  );
  // The per-thread family: calls answered by each thread.
  expect(
    Metrics.renderThreadCalls([
      [1, [t1.counts()]],
      [0, [t0.counts()]],
    ]),
  ).toContain('chainnode_thread_rpc_calls_total{thread="0"} 6\nchainnode_thread_rpc_calls_total{thread="1"} 7\n');
});
