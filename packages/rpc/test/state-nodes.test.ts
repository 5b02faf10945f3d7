// chainnode_getStateNodes over the executed fixture chain's store: the nodes of eth_getProof's
// answers (the account path and a storage path of a token at block 1,000, where branch nodes are
// stored as deltas against their parents') asked back by their keccak come back byte-equal, whole;
// code by its hash is eth_getCode's; an unknown hash is null; past the per-call caps -32005, a bad
// hash -32602.
import { bytesToHex, hexToBytes } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/store';
import { chainDir } from '@chainnode/testkit';
import { STATE_CODES_MAX, STATE_NODES_MAX } from '../src/methods/chainnode_getStateNodes.js';
import type { RpcServiceApi } from '../src/index.js';
import { serviceOnCopy } from './rpc-call.js';

const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const maybe = chainDir('fixtures') !== undefined ? describe : describe.skip;

async function rpc(
  svc: RpcServiceApi,
  method: string,
  params: unknown[],
): Promise<{ result?: unknown; error?: { code: number; message: string } }> {
  const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  return JSON.parse(reply.body as string) as { result?: unknown; error?: { code: number; message: string } };
}

const hashOf = (hex: string): string => bytesToHex(keccak256(hexToBytes(hex as `0x${string}`)));

maybe('chainnode_getStateNodes', () => {
  let svc: RpcServiceApi;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ svc, close } = await serviceOnCopy('fixtures'));
  }, 120_000);
  afterAll(async () => close?.());

  test('proof nodes asked back by their hashes come back byte-equal; code by hash; unknown hashes null', async () => {
    const proof = (await rpc(svc, 'eth_getProof', [TOKEN, ['0x2'], '0x3e8'])).result as {
      accountProof: string[];
      storageProof: { proof: string[] }[];
      codeHash: string;
    };
    const nodes = [...proof.accountProof, ...(proof.storageProof[0]?.proof ?? [])];
    expect(nodes.length).toBeGreaterThan(4);
    const unknown = bytesToHex(keccak256(Uint8Array.of(1, 2, 3)));
    const got = (
      await rpc(svc, 'chainnode_getStateNodes', [
        [...nodes.map(hashOf), unknown],
        [proof.codeHash, unknown],
      ])
    ).result as { nodes: (string | null)[]; codes: (string | null)[] };
    expect(got.nodes).toEqual([...nodes, null]);
    const code = (await rpc(svc, 'eth_getCode', [TOKEN, '0x3e8'])).result as string;
    expect(code.length).toBeGreaterThan(100);
    expect(got.codes).toEqual([code, null]);
    // Code hashes are optional.
    expect((await rpc(svc, 'chainnode_getStateNodes', [[hashOf(nodes[0] as string)]])).result).toEqual({
      nodes: [nodes[0]],
      codes: [],
    });
  });

  test('past the per-call caps: -32005; not a hash: -32602', async () => {
    const h = bytesToHex(keccak256(Uint8Array.of(9)));
    const many = (await rpc(svc, 'chainnode_getStateNodes', [Array(STATE_NODES_MAX + 1).fill(h)])).error;
    expect(many?.code).toBe(-32005);
    expect(many?.message).toBe(`node hashes: at most ${STATE_NODES_MAX} hashes a call, got ${STATE_NODES_MAX + 1}`);
    const codes = (await rpc(svc, 'chainnode_getStateNodes', [[], Array(STATE_CODES_MAX + 1).fill(h)])).error;
    expect(codes?.code).toBe(-32005);
    const bad = (await rpc(svc, 'chainnode_getStateNodes', [['0x1234']])).error;
    expect(bad?.code).toBe(-32602);
    expect((await rpc(svc, 'chainnode_getStateNodes', ['0x12'])).error?.code).toBe(-32602);
  });
});
