// Which state source replication takes, from what the upstream answers to the probes
// (replicate/sources.ts chooseReplicaSource), against scripted upstreams: a chainnode primary's
// trie diff first; from anvil Parity's stateDiff before the prestate tracer (anvil's prestate
// tracer replays a block once per transaction); from others the prestate tracer, then Parity's.
// Refusals as upstreams word them: -32601, a "not supported" message, or anvil over WebSocket's
// -32602 "data did not match any variant".
import type { Common } from '@ethereumjs/common';
import { UpstreamRpcError } from '@chainnode/core';
import type { UpstreamClient } from '@chainnode/core';
import type { RpcBlockSource } from '../src/rpc-source.js';
import { chooseReplicaSource } from '../src/replicate/sources.js';

type Answer = unknown | { refuse: [number, string] };

/** An upstream answering each method with its scripted answer (a refusal, or a result); the methods asked, in order. */
function scripted(answers: Record<string, Answer>): { client: UpstreamClient; asked: string[] } {
  const asked: string[] = [];
  const origin = 'ws://127.0.0.1:8545';
  const call = async (method: string): Promise<unknown> => {
    asked.push(method);
    const a = answers[method] ?? { refuse: [-32601, 'the method does not exist/is not available'] };
    if (typeof a === 'object' && a !== null && 'refuse' in a) {
      const [code, message] = (a as { refuse: [number, string] }).refuse;
      throw new UpstreamRpcError(origin, code, message);
    }
    return a;
  };
  return { client: { origin, call } as unknown as UpstreamClient, asked };
}

const choose = (client: UpstreamClient) =>
  chooseReplicaSource(client, {} as RpcBlockSource, {} as Common, { config: { chainId: 1 } });

const ANVIL_WS_REFUSAL = { refuse: [-32602, 'data did not match any variant of untagged enum EthRpcCall'] };

test('anvil over WebSocket (its refusal worded as -32602): Parity stateDiff, not a chainnode primary', async () => {
  const { client, asked } = scripted({
    web3_clientVersion: 'anvil/v1.7.1',
    chainnode_getStateDiff: ANVIL_WS_REFUSAL,
    trace_replayBlockTransactions: [],
    debug_traceBlockByNumber: [],
  });
  expect((await choose(client)).kind).toBe('parity');
  expect(asked).not.toContain('debug_traceBlockByNumber');
});

test('anvil over HTTP (-32601): Parity stateDiff first', async () => {
  const { client } = scripted({
    web3_clientVersion: 'anvil/v1.7.1',
    trace_replayBlockTransactions: [],
    debug_traceBlockByNumber: [],
  });
  expect((await choose(client)).kind).toBe('parity');
});

test('another upstream with both tracers: the prestate tracer; with only Parity: Parity; a primary: its diff', async () => {
  const both = scripted({
    web3_clientVersion: 'reth/v1.4.0',
    trace_replayBlockTransactions: [],
    debug_traceBlockByNumber: [],
  });
  expect((await choose(both.client)).kind).toBe('prestate');
  const parityOnly = scripted({
    web3_clientVersion: 'erigon/3.0.0',
    trace_replayBlockTransactions: [],
    debug_traceBlockByNumber: { refuse: [-32000, 'method not supported'] },
  });
  expect((await choose(parityOnly.client)).kind).toBe('parity');
  const primary = scripted({ web3_clientVersion: 'chainnode', chainnode_getStateDiff: { accounts: [] } });
  expect((await choose(primary.client)).kind).toBe('chainnode');
});

test('an upstream offering none: one error naming the methods and --ingest execute', async () => {
  const { client } = scripted({ web3_clientVersion: 'Geth/v1.15.0', chainnode_getStateDiff: ANVIL_WS_REFUSAL });
  await expect(choose(client)).rejects.toThrow(/offers no state changes to replicate from .*use --ingest execute/);
});
