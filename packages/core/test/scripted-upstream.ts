// A tiny local WebSocket server scripting an upstream's subscriptions, for the feeds' tests.
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An upstream that answers eth_subscribe(`kind`) with `reply(n)` (n: the subscribe count) and
 * keeps its sockets; `note` sends a notification on one of them.
 */
export async function scriptedUpstream(kind: string, reply: (n: number) => object) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  let subscribes = 0;
  wss.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data: Buffer) => {
      const q = JSON.parse(data.toString('utf8')) as { id: number; method: string; params: unknown[] };
      if (q.method === 'eth_subscribe' && q.params[0] === kind)
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: q.id, ...reply(++subscribes) }));
    });
  });
  const note = (ws: WebSocket, subscription: string, result: unknown) =>
    ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription, result } }));
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/key`,
    sockets,
    note,
    subscribes: () => subscribes,
    close: () => new Promise<void>((resolve) => wss.close(() => resolve())),
  };
}

/** Waits (up to 2 s) until `cond` holds. */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !cond(); i++) await sleep(20);
}
