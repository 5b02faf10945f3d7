// A serving thread's view of a followed datadir (thread/follow-runtime.ts), fed through a port as
// an app thread of --threads N is: a commit is applied to the thread's store before its
// subscribers hear of it, and the kept status (what /health and the metrics show) takes the
// commit's head at once, before the ingest's status message that follows the commit arrives.
import { MessageChannel } from 'node:worker_threads';
import { packCommit } from '@chainnode/core';
import type { ChainCommit, FollowStatus } from '@chainnode/core';
import { initialFollowStatus } from '../src/follow.js';
import { FollowRuntime } from '../src/thread/follow-runtime.js';
import type { FollowEvent } from '../src/thread/follow-runtime.js';

const hash = (n: number): Uint8Array => new Uint8Array(32).fill(n);
const commit = (head: number, removed: number[] = []): ChainCommit => ({
  removed: removed.map((n) => ({ number: BigInt(n), hash: hash(n), logs: [] })),
  added: [{ number: BigInt(head), hash: hash(head), logs: [] }],
  head: { number: BigInt(head), hash: hash(head) },
});
/** The ingest thread's message of a commit (packed, as ingest-worker.ts posts it). */
const committed = (head: number, removed: number[] = []): FollowEvent => ({
  type: 'commit',
  packed: packCommit(commit(head, removed)),
});
const status = (localHead: number, upstreamHead: number): FollowStatus => ({
  ...initialFollowStatus('http://upstream'),
  state: 'following',
  upstreamHead: BigInt(upstreamHead),
  upstreamHeadTimestamp: BigInt(upstreamHead * 12),
  localHead: BigInt(localHead),
  localHeadTimestamp: BigInt(localHead * 12),
  lagBlocks: BigInt(upstreamHead - localHead),
  lagSeconds: (upstreamHead - localHead) * 12,
});

describe('FollowRuntime (one serving thread)', () => {
  let channel: MessageChannel;
  let runtime: FollowRuntime;
  /** What happened on the serving side, in order. */
  let seen: string[];
  /** The kept status's local head and lag at each moment a subscriber heard of a commit. */
  let atPublish: [bigint, bigint][];

  beforeEach(() => {
    channel = new MessageChannel();
    runtime = FollowRuntime.fromPort(channel.port2, () => undefined);
    seen = [];
    atPublish = [];
    runtime.attach({ applyCommit: (c) => seen.push(`apply ${c.head.number}`) });
    runtime.subscribe((c) => {
      seen.push(`publish ${c.head.number}`);
      const s = runtime.status();
      atPublish.push([s.localHead, s.lagBlocks]);
    });
  });
  afterEach(async () => {
    await runtime.stop();
    channel.port1.close();
  });

  const post = (e: FollowEvent): void => channel.port1.postMessage(e);
  /** Waits until the port has delivered everything posted so far (a marker log line comes last). */
  const delivered = async (): Promise<void> => {
    const logged = new Promise<void>((resolve) => channel.port2.once('message', () => setImmediate(resolve)));
    post({ type: 'log', line: 'marker' });
    await logged;
  };

  test("a commit is applied, the status's head set to it, then published, before the ingest's own status", async () => {
    post({ type: 'status', status: status(10, 14) });
    await delivered();
    expect(runtime.status()).toMatchObject({ localHead: 10n, lagBlocks: 4n, lagSeconds: 48 });

    post(committed(11));
    await delivered();
    expect(seen).toEqual(['apply 11', 'publish 11']);
    expect(atPublish).toEqual([[11n, 3n]]);
    // Only the head and the lag in blocks move with the commit; the rest is the ingest's latest.
    expect(runtime.status()).toMatchObject({ state: 'following', localHead: 11n, lagBlocks: 3n, upstreamHead: 14n });

    post({ type: 'status', status: status(11, 15) });
    await delivered();
    expect(runtime.status()).toMatchObject({ localHead: 11n, lagBlocks: 4n, lagSeconds: 48, upstreamHead: 15n });
  });

  test('a reorg to a lower head lowers it; a head above the upstream lags by 0', async () => {
    post({ type: 'status', status: status(12, 12) });
    post(committed(11, [11, 12]));
    await delivered();
    expect(runtime.status()).toMatchObject({ localHead: 11n, lagBlocks: 1n });

    post(committed(13));
    await delivered();
    expect(runtime.status()).toMatchObject({ localHead: 13n, lagBlocks: 0n });
  });
});
