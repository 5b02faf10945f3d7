// The JSON-RPC source: blocks of an upstream node (geth, reth, anvil, another chainnode) through
// standard methods only — eth_chainId, eth_getBlockByNumber / eth_getBlockByHash with full
// transactions, eth_getUncleByBlockHashAndIndex. Each block is rebuilt from its JSON with
// @ethereumjs/block (header and every typed transaction) and must hash to the hash the upstream
// names; the pipeline then checks its roots and executes it like a block of chain.rlp. Malformed
// replies are UpstreamErrors (retried); a block whose rebuilt header or transaction does not hash
// to what the upstream says is a BlockVerificationError (the ingest stops).
import { createBlockFromRPC, createBlockHeaderFromRPC } from '@ethereumjs/block';
import type { Block, BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { bytesToHex, equalsBytes, hexToBytes } from '@ethereumjs/util';
import { BlockVerificationError, UpstreamError } from './errors.js';
import type { UpstreamClient } from '@chainnode/core';

/** An upstream block, verified to hash to the upstream's hash, as consensus RLP. */
export interface UpstreamBlock {
  number: bigint;
  hash: Uint8Array;
  parentHash: Uint8Array;
  timestamp: bigint;
  raw: Uint8Array;
  block: Block;
}

/** The header fields of a block as the upstream states them (not rebuilt). */
export interface UpstreamTip {
  number: bigint;
  hash: Uint8Array;
  parentHash: Uint8Array;
  timestamp: bigint;
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,63})$/;

function field(obj: Record<string, unknown>, name: string, re: RegExp, origin: string): string {
  const v = obj[name];
  if (typeof v !== 'string' || !re.test(v)) throw new UpstreamError(`${origin}: block reply has no valid "${name}"`);
  return v;
}

function tipOf(json: unknown, origin: string): UpstreamTip {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new UpstreamError(`${origin}: block reply is not an object`);
  const o = json as Record<string, unknown>;
  return {
    number: BigInt(field(o, 'number', QUANTITY, origin)),
    hash: hexToBytes(field(o, 'hash', HASH, origin) as `0x${string}`),
    parentHash: hexToBytes(field(o, 'parentHash', HASH, origin) as `0x${string}`),
    timestamp: BigInt(field(o, 'timestamp', QUANTITY, origin)),
  };
}

export class RpcBlockSource {
  constructor(
    readonly client: UpstreamClient,
    private readonly common: Common,
  ) {}

  static async chainIdOf(client: UpstreamClient): Promise<bigint> {
    const v = await client.call('eth_chainId', []);
    if (typeof v !== 'string' || !QUANTITY.test(v))
      throw new UpstreamError(`${client.origin}: eth_chainId reply is not a quantity`);
    return BigInt(v);
  }

  /** The upstream's head as it states it (eth_getBlockByNumber("latest", false)). */
  async latest(): Promise<UpstreamTip> {
    const json = await this.client.call('eth_getBlockByNumber', ['latest', false]);
    if (json === null) throw new UpstreamError(`${this.client.origin}: no latest block`);
    return tipOf(json, this.client.origin);
  }

  /** Header-only view of block `hash` (undefined if the upstream does not have it). */
  async tipByHash(hash: Uint8Array): Promise<UpstreamTip | undefined> {
    const json = await this.client.call('eth_getBlockByHash', [bytesToHex(hash), false]);
    return json === null ? undefined : tipOf(json, this.client.origin);
  }

  async byNumber(n: bigint): Promise<UpstreamBlock | undefined> {
    const json = await this.client.call('eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
    if (json === null) return undefined;
    const b = await this.rebuild(json);
    if (b.number !== n) throw new UpstreamError(`${this.client.origin}: asked for block ${n}, got block ${b.number}`);
    return b;
  }

  async byHash(hash: Uint8Array): Promise<UpstreamBlock | undefined> {
    const json = await this.client.call('eth_getBlockByHash', [bytesToHex(hash), true]);
    if (json === null) return undefined;
    const b = await this.rebuild(json);
    if (!equalsBytes(b.hash, hash))
      throw new UpstreamError(`${this.client.origin}: asked for block ${bytesToHex(hash)}, got ${bytesToHex(b.hash)}`);
    return b;
  }

  /** Rebuilds a header from its JSON alone and checks it hashes to the stated hash. */
  headerFromJson(json: unknown): BlockHeader {
    const tip = tipOf(json, this.client.origin);
    let header: BlockHeader;
    try {
      header = createBlockHeaderFromRPC(json as never, {
        common: this.common,
        setHardfork: true,
        skipConsensusFormatValidation: true,
      });
    } catch (err) {
      throw new UpstreamError(
        `${this.client.origin}: block ${tip.number} header cannot be rebuilt: ${(err as Error).message}`,
      );
    }
    if (!equalsBytes(header.hash(), tip.hash)) {
      throw new BlockVerificationError(
        tip.number,
        'hash',
        bytesToHex(tip.hash),
        `${bytesToHex(header.hash())} (the header rebuilt from the upstream's fields)`,
      );
    }
    return header;
  }

  async blockJson(n: bigint): Promise<unknown> {
    return this.client.call('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
  }

  private async rebuild(json: unknown): Promise<UpstreamBlock> {
    const origin = this.client.origin;
    const tip = tipOf(json, origin);
    const o = json as Record<string, unknown>;
    const txs = o.transactions;
    const uncleHashes = o.uncles ?? [];
    if (!Array.isArray(txs)) throw new UpstreamError(`${origin}: block ${tip.number} has no transaction list`);
    if (!Array.isArray(uncleHashes) || uncleHashes.length > 2)
      throw new UpstreamError(`${origin}: block ${tip.number} has an invalid uncle list`);
    for (const t of txs) {
      if (typeof t !== 'object' || t === null)
        throw new UpstreamError(
          `${origin}: block ${tip.number}: transactions are not objects (full transactions expected)`,
        );
    }
    const uncles: unknown[] = [];
    for (let i = 0; i < uncleHashes.length; i++) {
      const u = await this.client.call('eth_getUncleByBlockHashAndIndex', [
        bytesToHex(tip.hash),
        `0x${i.toString(16)}`,
      ]);
      if (u === null) throw new UpstreamError(`${origin}: block ${tip.number}: uncle ${i} not served`);
      const uh = this.headerFromJson(u); // hashes to the hash the uncle reply names
      const want = uncleHashes[i];
      if (typeof want !== 'string' || !HASH.test(want) || !equalsBytes(uh.hash(), hexToBytes(want as `0x${string}`))) {
        throw new BlockVerificationError(tip.number, `uncle ${i} hash`, String(want), bytesToHex(uh.hash()));
      }
      uncles.push(u);
    }
    let block: Block;
    try {
      block = createBlockFromRPC(json as never, uncles as never[], { common: this.common, setHardfork: true });
    } catch (err) {
      throw new UpstreamError(
        `${origin}: block ${tip.number} cannot be rebuilt from its JSON: ${(err as Error).message}`,
      );
    }
    const computed = block.hash();
    if (!equalsBytes(computed, tip.hash)) {
      throw new BlockVerificationError(
        tip.number,
        'hash',
        bytesToHex(tip.hash),
        `${bytesToHex(computed)} (the header rebuilt from the upstream's fields)`,
      );
    }
    block.transactions.forEach((tx, i) => {
      const stated = (txs[i] as { hash?: unknown }).hash;
      if (
        typeof stated !== 'string' ||
        !HASH.test(stated) ||
        !equalsBytes(tx.hash(), hexToBytes(stated as `0x${string}`))
      ) {
        throw new BlockVerificationError(
          tip.number,
          `transaction ${i} hash`,
          String(stated),
          `${bytesToHex(tx.hash())} (rebuilt from the upstream's fields)`,
        );
      }
    });
    return { ...tip, raw: block.serialize(), block };
  }
}
