// The upstream's pending transactions against a tiny local WebSocket server scripting the
// upstream: hashes handed on in batches, hostile notifications dropped and counted, repeats
// dropped, a refusal and an HTTP upstream logged once, a dropped connection resubscribed.
import type { WebSocket } from 'ws';
import { UpstreamPendingFeed } from '../src/upstream-pending.js';
import { scriptedUpstream, sleep, until } from './scripted-upstream.js';

const hash = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;

const upstream = (reply: (n: number) => object) => scriptedUpstream('newPendingTransactions', reply);

test('hashes handed on in batches, lowercase; hostile notifications and repeats dropped and counted; a dropped socket resubscribes', async () => {
  const up = await upstream((n) => ({ result: `0xsub${n}` }));
  const got: string[] = [];
  const lines: string[] = [];
  const feed = new UpstreamPendingFeed({
    url: up.url,
    onHashes: (h) => got.push(...h),
    log: (l) => lines.push(l),
    flushMs: 20,
    retryMs: 20,
  });
  try {
    await until(() => up.subscribes() === 1);
    await sleep(20);
    const ws = up.sockets[0] as WebSocket;
    up.note(ws, '0xsub1', hash(0xab).toUpperCase().replace('0X', '0x'));
    for (const bad of ['0x12', hash(2).slice(2), 42, null, { h: hash(3) }, `${hash(4)}00`]) up.note(ws, '0xsub1', bad);
    up.note(ws, '0xother', hash(5)); // another subscription's
    ws.send('not json');
    up.note(ws, '0xsub1', hash(0xab)); // a repeat
    await until(() => feed.stats().invalid === 8);
    await sleep(60);
    expect(got).toEqual([hash(0xab)]);
    expect(feed.stats()).toEqual({ delivered: 1, invalid: 8, overflow: 0, repeated: 1 });
    expect(lines.some((l) => /^upstream pending transactions: dropped \d+ /.test(l))).toBe(true);
    ws.terminate();
    await until(() => up.subscribes() === 2);
    await sleep(20);
    up.note(up.sockets[1] as WebSocket, '0xsub2', hash(6));
    await until(() => got.length === 2);
    expect(got).toEqual([hash(0xab), hash(6)]);
  } finally {
    feed.stop();
    await up.close();
  }
});

test('an upstream that refuses the subscription, and an HTTP upstream, offer none: logged once', async () => {
  const up = await upstream(() => ({ error: { code: -32601, message: 'no such subscription' } }));
  const lines: string[] = [];
  const feed = new UpstreamPendingFeed({ url: up.url, onHashes: () => undefined, log: (l) => lines.push(l) });
  try {
    await until(() => lines.length > 0);
    await sleep(50);
    expect(lines).toEqual([
      `upstream pending transactions: none (${new URL(up.url).origin} refused newPendingTransactions: no such subscription)`,
    ]);
    expect(up.subscribes()).toBe(1);
  } finally {
    feed.stop();
    await up.close();
  }
  const http: string[] = [];
  new UpstreamPendingFeed({
    url: 'http://127.0.0.1:1/key',
    onHashes: () => undefined,
    log: (l) => http.push(l),
  }).stop();
  expect(http).toEqual(['upstream pending transactions: none (http://127.0.0.1:1 is not a WebSocket upstream)']);
});
