// Reply-byte budgets of the transport, in process with a service whose every answer is 256 KiB:
// a WebSocket client that never reads is closed as a slow reader after wsSlowReaderTimeoutSeconds,
// and, when the process is over maxReplyBytesInFlight, HTTP gets 503 -32005 and WebSocket
// messages wait until the non-reader is shed (1008 with its reason); then service resumes.
import type { RpcReply, RpcServiceApi } from '@chainnode/rpc';
import { rawWebSocket, readUntilClose, textFrame } from '@chainnode/testkit';
import { transportConfig } from '../src/index.js';
import { createKey } from '@chainnode/accounts';
import type { RunningServer, TransportConfig } from '../src/index.js';
import { fakeStore, post, sleep, tempDir, wsOpen, startOnDatadir } from './helpers.js';

const BIG = 256 * 1024;

/** Answers anything with a 256 KiB result (or, for "small", a short one), echoing the id. */
const bigService: RpcServiceApi = {
  async handle(body: string): Promise<RpcReply> {
    const req = JSON.parse(body) as { id: number; method: string };
    const result = req.method === 'small' ? '"ok"' : `"${'a'.repeat(BIG)}"`;
    return { body: `{"jsonrpc":"2.0","id":${req.id},"result":${result}}`, batch: false };
  },
};

async function start(
  config: Partial<TransportConfig>,
): Promise<{ srv: RunningServer; key: string; port: number; cleanup: () => Promise<void> }> {
  const t = tempDir();
  const { key } = await createKey(t.dir, { plan: 'custom' });
  const srv = await startOnDatadir({
    service: bigService,
    store: fakeStore(),
    datadir: t.dir,
    config: transportConfig(config),
    host: '127.0.0.1',
    port: 0,
  });
  return {
    srv,
    key,
    port: srv.port,
    cleanup: async () => {
      await srv.close();
      t.cleanup();
    },
  };
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const msg = (id: number, method = 'big'): string => JSON.stringify({ jsonrpc: '2.0', id, method, params: [] });

test('a WebSocket client that stops reading is closed as a slow reader; others are served meanwhile', async () => {
  const s = await start({ wsSlowReaderTimeoutSeconds: 1, wsMaxBackpressureBytes: 64 * 1024 * 1024 });
  try {
    const hog = await rawWebSocket(s.port, `/ws/v3/${s.key}`);
    for (let i = 0; i < 80; i++) hog.socket.write(textFrame(msg(i))); // 20 MiB of answers
    const other = await wsOpen(`ws://127.0.0.1:${s.port}/ws/v3/${s.key}`);
    let answered = 0;
    await until('the slow reader cut', async () => {
      const r = (await other.request(msg(1, 'small'))) as { result?: string };
      if (r.result === 'ok') answered++;
      return (s.srv.metrics.cuts.get('slow_reader') ?? 0) >= 1;
    });
    expect(answered).toBeGreaterThan(0);
    const closed = await readUntilClose(hog.socket, hog.pending, 20_000);
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/^slow reader/);
    // What was buffered before the cut is still delivered ahead of the close frame.
    expect(closed.bytes).toBeGreaterThan(0);
    other.ws.close();
  } finally {
    await s.cleanup();
  }
});

test('over the process budget: HTTP 503 -32005, WebSocket messages wait; the stalled holder is shed, then all resumes', async () => {
  const s = await start({
    maxReplyBytesInFlight: 2 * 1024 * 1024,
    wsMaxBackpressureBytes: 64 * 1024 * 1024,
    wsSlowReaderTimeoutSeconds: 600,
  });
  try {
    const base = `http://127.0.0.1:${s.port}/v3/${s.key}`;
    expect((await post(base, msg(1, 'small'))).status).toBe(200);
    const other = await wsOpen(`ws://127.0.0.1:${s.port}/ws/v3/${s.key}`);
    const hog = await rawWebSocket(s.port, `/ws/v3/${s.key}`);
    for (let i = 0; i < 80; i++) hog.socket.write(textFrame(msg(i)));
    let busy: { status: number; json: unknown } | undefined;
    await until('HTTP refused while over budget', async () => {
      const r = await post(base, msg(2, 'small'));
      if (r.status === 503) busy = r;
      return busy !== undefined || (s.srv.metrics.cuts.get('process_budget') ?? 0) >= 1;
    });
    expect(busy?.json).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32005, message: 'server busy: reply bytes in flight are over the process budget, retry later' },
    });
    // A WebSocket message sent now waits, and is answered once the non-reader is shed.
    const waited = other.request(msg(3, 'small'));
    await until('the shed', () => (s.srv.metrics.cuts.get('process_budget') ?? 0) >= 1);
    expect(await waited).toEqual({ jsonrpc: '2.0', id: 3, result: 'ok' });
    const closed = await readUntilClose(hog.socket, hog.pending, 20_000);
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/^server reply budget exhausted/);
    await until('HTTP served again', async () => (await post(base, msg(4, 'small'))).status === 200);
    other.ws.close();
  } finally {
    await s.cleanup();
  }
});
