// The genesis alloc's state trie in one pass: each storage trie, then the account trie, built by
// the store's batched trie update (keys sorted, every node hashed once), the nodes and code handed
// to `put` as @ethereumjs/statemanager's generateCanonicalGenesis writes them (a node under its
// hash, code under "c" ++ its hash: GenesisStateSink). One @ethereumjs/mpt put per account and slot built the
// mainnet-shaped chain's genesis (~114,000 accounts) in ~8 s, most of a replica's start.
// The values follow generateCanonicalGenesis: balance and nonce as given (nonce 0 when absent),
// code stored when given (empty code too), storage keys of 32 bytes, values without their leading
// zeros, zero values left out; an address given twice (in any case) is its last entry.
import { RLP } from '@ethereumjs/rlp';
import {
  KECCAK256_NULL,
  KECCAK256_RLP,
  bigIntToUnpaddedBytes,
  hexToBytes,
  toBytes,
  unpadBytes,
} from '@ethereumjs/util';
import type { GenesisState } from '@ethereumjs/common';
import { keccak256, updateTrie } from '@chainnode/store';
import type { NodePut } from '@chainnode/store';

/** The code rows' key prefix ("c"), as the state manager writes them. */
const CODE_PREFIX = 0x63;

/** Where the genesis state goes: each node by its hash, each code under "c" ++ its hash. */
export interface GenesisStateSink {
  node: NodePut;
  code(key: Uint8Array, code: Uint8Array): void;
}

/** A sink that keeps nothing (only the roots are wanted). */
export const DISCARD_STATE: GenesisStateSink = { node: () => {}, code: () => {} };

export interface GenesisStateRoots {
  /** The state root. */
  root: Uint8Array;
  /** Each account's storage root, by lowercase 0x-address (those with storage only). */
  storageRoots: Map<string, Uint8Array>;
}

/** A hex string of the parsed alloc as bytes, as the state manager reads it (toBytes). */
const bytesOf = (hex: string): Uint8Array => toBytes(hex as `0x${string}`);

/** A quantity of the parsed alloc (hex, as parseGethGenesisState gives it). */
const quantity = (v: string | undefined): bigint => (v === undefined || v === '0x' ? 0n : BigInt(v));

/**
 * Builds the state of `state` (parseGethGenesisState's output), handing every node and code to
 * `sink`. Throws on a storage key that is not 32 bytes or a value over 32 bytes, as the state
 * manager does.
 */
export function buildGenesisState(state: GenesisState, sink: GenesisStateSink): GenesisStateRoots {
  const put = sink.node;
  const none = (): undefined => undefined;
  const accounts: [Uint8Array, Uint8Array][] = [];
  const storageRoots = new Map<string, Uint8Array>();
  for (const [address, entry] of Object.entries(state)) {
    const [balance, code, storage, nonce] = Array.isArray(entry) ? entry : [entry, undefined, undefined, undefined];
    let codeHash = KECCAK256_NULL;
    if (code !== undefined) {
      const bytes = bytesOf(code);
      codeHash = keccak256(bytes);
      const key = new Uint8Array(33);
      key[0] = CODE_PREFIX;
      key.set(codeHash, 1);
      sink.code(key, bytes);
    }
    let storageRoot = KECCAK256_RLP;
    if (storage !== undefined && storage.length > 0) {
      const slots: [Uint8Array, Uint8Array][] = [];
      for (const [k, v] of storage) {
        const key = bytesOf(k);
        if (key.length !== 32) throw new Error(`genesis alloc ${address}: storage key ${k} is not 32 bytes`);
        const value = bytesOf(v);
        if (value.length > 32) throw new Error(`genesis alloc ${address}: storage value ${v} is over 32 bytes`);
        const word = unpadBytes(value);
        // A later entry for the same slot wins (the state manager's last put); zero deletes.
        slots.push([keccak256(key), word.length === 0 ? new Uint8Array(0) : RLP.encode(word)]);
      }
      storageRoot = updateTrie(KECCAK256_RLP, lastOfEach(slots), none, put);
      storageRoots.set(address, storageRoot);
    }
    const leaf = RLP.encode([
      bigIntToUnpaddedBytes(quantity(nonce)),
      bigIntToUnpaddedBytes(quantity(balance)),
      storageRoot,
      codeHash,
    ]);
    accounts.push([keccak256(hexToBytes(address as `0x${string}`)), leaf]);
  }
  // One entry per address already: parseGethGenesisState keys the alloc by lowercase address.
  return { root: updateTrie(KECCAK256_RLP, accounts, none, put), storageRoots };
}

/** The slots with each key once, its last value (updateTrie takes each key once; two spellings of a slot are one key). */
function lastOfEach(entries: [Uint8Array, Uint8Array][]): [Uint8Array, Uint8Array][] {
  const byKey = new Map<string, [Uint8Array, Uint8Array]>();
  for (const e of entries) byKey.set(Buffer.from(e[0]).toString('latin1'), e);
  return [...byKey.values()];
}
