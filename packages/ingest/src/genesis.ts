// geth genesis.json -> Common (hardfork per block and timestamp, the KZG for blob data), the genesis
// state (geth alloc) and the genesis block.
import { readFile } from 'node:fs/promises';
import { createBlock } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import { createCommonFromGethGenesis, parseGethGenesisState } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { KECCAK256_RLP, bytesToHex } from '@ethereumjs/util';
import { ChainSourceError } from './errors.js';
import { nativeEcrecover } from './ecrecover.js';
import { lazyKzg, rememberParams } from '@chainnode/exec';
import { keccak256 } from '@chainnode/store';
import { MESSAGE_PASSER_ADDRESS, withdrawalsRootIsStorageRoot } from './replicate/op-stack.js';
import { DISCARD_STATE, buildGenesisState } from './genesis-state.js';
import type { GenesisStateSink } from './genesis-state.js';

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
  const common = createCommonFromGethGenesis(json, {
    chain: 'custom',
    // hash-wasm's Keccak (the store's) for the trie and the EVM: the pure-JS one was a tenth of
    // an import's CPU. The KZG is loaded when a block first runs the point evaluation precompile
    // (the executing VM is wrapped for it: exec's kzg.ts); a blob transaction of a block needs
    // only its presence.
    customCrypto: { kzg: lazyKzg, ecrecover: nativeEcrecover, keccak256 },
  });
  // Every block's header and transactions are built on copies of it.
  rememberParams(common);
  return common;
}

const hexOr = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? `0x${v.toString(16)}` : undefined;

/**
 * The genesis block of `json`: its alloc's state built (genesis-state.ts), every node and code
 * handed to `sink` (none kept by default: the block alone is wanted).
 */
export async function buildGenesis(
  json: GethGenesis,
  common: Common,
  sink: GenesisStateSink = DISCARD_STATE,
): Promise<Block> {
  const { root: stateRoot, storageRoots } = buildGenesisState(parseGethGenesisState(json), sink);
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
  // OP-stack from Isthmus: the withdrawalsRoot is the L2ToL1MessagePasser's storage root
  // (op-geth's genesis, specs/protocol/isthmus/exec-engine.md "Genesis Block").
  if (withdrawalsRootIsStorageRoot(json, BigInt(hexOr(g.timestamp) ?? 0))) {
    header.withdrawalsRoot = storageRoots.get(bytesToHex(MESSAGE_PASSER_ADDRESS)) ?? KECCAK256_RLP;
  }
  for (const k of Object.keys(header)) if (header[k] === undefined) delete header[k];
  return createBlock({ header }, { common, setHardfork: true, skipConsensusFormatValidation: true });
}

const HISTORY_STORAGE = '0x0000f90827f1c53a10cb7a02335b175320002935';
const HISTORY_STORAGE_CODE =
  '0x3373fffffffffffffffffffffffffffffffffffffffe14604657602036036042575f35600143038111604257611fff81430311604257611fff9006545f5260205ff35b5f5ffd5b5f35611fff60014303065500';

/**
 * The genesis anvil --init builds from `json` (anvil 1.7.1, --network optimism or not): with
 * EIP-2935 active at genesis (Prague; Isthmus on an OP-stack chain) and no code at the history
 * contract's address in the alloc, anvil deploys the contract there itself (nonce 0), so its
 * block 1 writes the genesis hash into it. geth and op-geth build the alloc as written.
 * Undefined when anvil builds `json` as written.
 */
export function anvilGenesisJson(json: GethGenesis): GethGenesis | undefined {
  const c = commonFromGenesis(json);
  c.setHardforkBy({ blockNumber: 0n, timestamp: BigInt(hexOr((json as { timestamp?: unknown }).timestamp) ?? 0) });
  if (!c.isActivatedEIP(2935)) return undefined;
  const alloc = (json.alloc ?? {}) as Record<string, { code?: string }>;
  const entry = Object.entries(alloc).find(([a]) => a.toLowerCase().replace(/^0x/, '') === HISTORY_STORAGE.slice(2));
  const code = entry?.[1].code;
  if (code !== undefined && code !== '' && code !== '0x') return undefined;
  const kept = Object.fromEntries(Object.entries(alloc).filter(([a]) => a !== entry?.[0]));
  return {
    ...json,
    alloc: {
      ...kept,
      [HISTORY_STORAGE.slice(2)]: { balance: '0x0', ...entry?.[1], code: HISTORY_STORAGE_CODE, nonce: '0x0' },
    },
  } as GethGenesis;
}
