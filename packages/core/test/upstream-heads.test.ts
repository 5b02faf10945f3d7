// The upstream's new heads as a wake-up, against a tiny local WebSocket server scripting the
// upstream: a header-shaped notification calls onHead, anything else is counted and ignored; a
// refusal and an HTTP upstream are logged once (the follower keeps polling); a dropped connection
// is subscribed again.
import type { WebSocket } from 'ws';
import { UpstreamHeadsFeed } from '../src/upstream-heads.js';
import { scriptedUpstream, sleep, until } from './scripted-upstream.js';

const upstream = (reply: (n: number) => object) => scriptedUpstream('newHeads', reply);

test('a header wakes; hostile notifications are counted and wake nothing; a dropped socket subscribes again', async () => {
  const up = await upstream((n) => ({ result: `0xsub${n}` }));
  let heads = 0;
  const lines: string[] = [];
  const feed = new UpstreamHeadsFeed({ url: up.url, onHead: () => heads++, log: (l) => lines.push(l), retryMs: 50 });
  try {
    await until(() => up.subscribes() === 1);
    await sleep(50);
    const ws = up.sockets[0] as WebSocket;
    up.note(ws, '0xsub1', { number: '0x10', hash: `0x${'ab'.repeat(32)}` });
    up.note(ws, '0xsub1', { number: 16 }); // not a quantity
    up.note(ws, '0xsub1', null);
    up.note(ws, '0xother', { number: '0x11' }); // not our subscription
    ws.send('not json');
    await until(() => feed.invalid === 4);
    expect(heads).toBe(1);
    expect(feed.invalid).toBe(4);
    ws.terminate();
    await until(() => up.subscribes() === 2);
    await sleep(50);
    up.note(up.sockets[1] as WebSocket, '0xsub2', { number: '0x11' });
    await until(() => heads === 2);
    expect(heads).toBe(2);
    expect(lines).toEqual([]);
  } finally {
    feed.stop();
    await up.close();
  }
});

test('an upstream that refuses newHeads, and an HTTP upstream, offer none: logged once, the poll stays', async () => {
  const up = await upstream(() => ({ error: { code: -32601, message: 'subscriptions not supported' } }));
  const lines: string[] = [];
  const feed = new UpstreamHeadsFeed({ url: up.url, onHead: () => undefined, log: (l) => lines.push(l), retryMs: 20 });
  try {
    await until(() => lines.length > 0);
    await sleep(100);
    expect(up.subscribes()).toBe(1);
    expect(lines).toEqual([
      `upstream new heads: none (${new URL(up.url).origin} refused newHeads: subscriptions not supported); polling`,
    ]);
  } finally {
    feed.stop();
    await up.close();
  }
  const http: string[] = [];
  new UpstreamHeadsFeed({ url: 'http://127.0.0.1:1/key', onHead: () => undefined, log: (l) => http.push(l) }).stop();
  expect(http).toEqual(['upstream new heads: none (http://127.0.0.1:1 is not a WebSocket upstream); polling']);
});
