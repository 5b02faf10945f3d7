// Worker script for offload.test.ts: serveOffloadedCalls over the FakeStore, with eth_getLogs
// misbehaving on purpose for some addresses (first byte of the first address):
//   0xde: the worker crashes (an uncaught exception);
//   0x5c: the worker is stuck (a busy loop that never yields);
//   0x9a: the call waits until the test broadcasts 'release' on GATE_CHANNEL ('started' is
//         broadcast when it begins).
// workerData: { config?, failStart?, failWith?: 'unavailable' | 'bug' } (failWith: every head()
// read throws that, as FakeStore does). When the pool closes it,
// the store broadcasts 'store closed'.
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { StoreUnavailableError } from '@chainnode/core';
import type { LogQuery, LogQueryOptions, LogQueryResult } from '@chainnode/core';
import { serveOffloadedCalls } from '../src/index.js';
import type { RpcConfig } from '../src/index.js';
import { FakeStore } from './fake-store.js';
import { CRASH, GATE_CHANNEL, GATED, STUCK } from './offload-gate.js';

const data = (workerData ?? {}) as {
  config?: Partial<RpcConfig>;
  failStart?: boolean;
  failWith?: 'unavailable' | 'bug';
};
if (data.failStart === true) throw new Error('cannot open the store (test)');

const channel = new BroadcastChannel(GATE_CHANNEL);
let release: (() => void)[] = [];
channel.onmessage = (e: unknown) => {
  if ((e as { data: unknown }).data !== 'release') return;
  for (const r of release) r();
  release = [];
};

class Misbehaving extends FakeStore {
  override async logs(q: LogQuery, o: LogQueryOptions): Promise<LogQueryResult> {
    const first = q.addresses[0]?.[0];
    if (first === CRASH) {
      setImmediate(() => {
        throw new Error('offload worker crash (test)');
      });
      return new Promise<never>(() => {});
    }
    if (first === STUCK) for (;;);
    if (first === GATED) {
      const released = new Promise<void>((r) => release.push(r));
      channel.postMessage('started');
      await released;
    }
    return super.logs(q, o);
  }
  override async close(): Promise<void> {
    channel.postMessage('store closed');
  }
}

const port = parentPort!;
const store = new Misbehaving(
  data.failWith === 'unavailable'
    ? { failWith: new StoreUnavailableError('closed') }
    : data.failWith === 'bug'
      ? { failWith: new Error('EIO: /secret/path/000123.ldb') }
      : {},
);
try {
  await serveOffloadedCalls(port, store, data.config);
} finally {
  await store.close();
  channel.close();
  port.close();
}
