// chainnode_getStateNodes: trie nodes and contract code by their keccak, as this node stores them
// (a delta row rebuilt whole): what a node joining the chain at block N downloads N's whole state
// by (`--join-state download`), walking down from N's state root and taking each node only if it
// hashes to the hash its parent names. Content-addressed, so nothing in the answer needs trusting
// (docs/json-rpc.md, "Replication"). A hash this node does not hold answers null.
import { LimitExceededError, ResponseTooLargeError, ServerError, toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { ParamError, decodeArgs, decodeHash } from '../params.js';

/** Trie node hashes one call may ask for (a node is at most ~532 bytes: ~1.1 MB of hex). */
export const STATE_NODES_MAX = 1024;
/** Code hashes one call may ask for (a contract's code is up to 24 KiB on mainnet, more elsewhere). */
export const STATE_CODES_MAX = 64;

export interface StateNodesParams {
  nodes: Bytes[];
  codes: Bytes[];
}

export interface JsonStateNodes {
  nodes: (Hex | null)[];
  codes: (Hex | null)[];
}

function hashList(v: unknown, what: string, max: number): Bytes[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new ParamError(`${what}: expected an array of hashes`);
  if (v.length > max)
    throw new LimitExceededError(`${what}: at most ${max} hashes a call, got ${v.length}`, { limit: max });
  return v.map((h) => decodeHash(h));
}

export const chainnode_getStateNodes: MethodDef<StateNodesParams, JsonStateNodes> = {
  // As one eth_getProof per 16 nodes or so: a download of a small chain's state is a few calls.
  cost: 500,
  params: 'node hashes (at most 1,024), code hashes (at most 64; optional)',
  decode: (params) =>
    decodeArgs(
      params,
      2,
      (arg) => ({
        nodes: hashList(arg(0), 'node hashes', STATE_NODES_MAX),
        codes: hashList(arg(1), 'code hashes', STATE_CODES_MAX),
      }),
      1,
    ),
  // Up to 1,088 synchronous row reads: with offload workers, off the event loop.
  offload: true,
  async handle(ctx, { nodes, codes }) {
    const store = ctx.store;
    if (store.stateNodes === undefined) throw new ServerError('this node does not serve trie nodes by hash');
    const found = nodes.length === 0 ? [] : await store.stateNodes(nodes);
    const foundCodes = await Promise.all(codes.map((h) => store.code(h)));
    let bytes = 0;
    const hexOf = (b: Bytes | undefined): Hex | null => {
      if (b === undefined) return null;
      bytes += 2 * b.length + 4;
      return toData(b);
    };
    const out = { nodes: found.map(hexOf), codes: foundCodes.map(hexOf) };
    if (bytes > ctx.config.maxBatchResponseBytes) throw new ResponseTooLargeError();
    return out;
  },
};
