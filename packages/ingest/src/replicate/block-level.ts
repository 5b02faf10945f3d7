// The state changes a block makes outside its transactions, which per-transaction tracer diffs
// (prestateTracer diffMode, Parity stateDiff) leave out: the EIP-4788 and EIP-2935 system writes
// before the transactions, and block/uncle rewards (proof of work) and withdrawals after them.
// A chainnode primary's diff is whole-block and needs none of this. What is not applied here
// (the DAO fork's irregular change, the EIP-7002/7251 request dequeues, EIP-161 deletions of
// touched empty accounts) makes the state root differ, and the block stops with that field.
import { ConsensusType } from '@ethereumjs/common';
import type { Common } from '@ethereumjs/common';
import { KECCAK256_NULL, bigIntToBytes, equalsBytes, hexToBytes, setLengthLeft } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/store';
import { bytesToBigInt } from '@chainnode/core';
import type { HeaderRecord } from '@chainnode/core';
import type { StateOverlay } from './state.js';

const BEACON_ROOTS = hexToBytes('0x000f3df6d732807ef1319fb7b8bb8522d0beac02');
const HISTORY_STORAGE = hexToBytes('0x0000f90827f1c53a10cb7a02335b175320002935');
const WITHDRAWAL_REQUESTS = hexToBytes('0x00000961ef480eb55e80d19ad83579a64c007002');
const CONSOLIDATION_REQUESTS = hexToBytes('0x0000bbddc7ce488642fb579f8b00f3a590007251');
const RING = 8191n;
const GWEI = 1_000_000_000n;

const slotKey = (slot: bigint): Uint8Array => keccak256(setLengthLeft(bigIntToBytes(slot), 32));

async function hasCode(overlay: StateOverlay, address: Uint8Array): Promise<boolean> {
  const a = await overlay.get(keccak256(address));
  return a !== undefined && !equalsBytes(a.codeHash, KECCAK256_NULL);
}

/** The block's hardfork view of the chain config. */
function forkOf(common: Common, h: HeaderRecord): Common {
  const c = common.copy();
  c.setHardforkBy({ blockNumber: h.number, timestamp: h.timestamp });
  return c;
}

/** System writes made before the first transaction (EIP-4788, EIP-2935). */
export async function applyPreTransactions(overlay: StateOverlay, common: Common, h: HeaderRecord): Promise<void> {
  const c = forkOf(common, h);
  if (c.isActivatedEIP(4788) && h.parentBeaconBlockRoot !== undefined && (await hasCode(overlay, BEACON_ROOTS))) {
    const key = keccak256(BEACON_ROOTS);
    const i = h.timestamp % RING;
    await overlay.setStorage(key, slotKey(i), bigIntToBytes(h.timestamp), '0x000f3df6d732807ef1319fb7b8bb8522d0beac02');
    await overlay.setStorage(key, slotKey(i + RING), h.parentBeaconBlockRoot);
  }
  if (c.isActivatedEIP(2935) && h.number > 0n && (await hasCode(overlay, HISTORY_STORAGE))) {
    await overlay.setStorage(keccak256(HISTORY_STORAGE), slotKey((h.number - 1n) % RING), h.parentHash);
  }
}

async function addBalance(overlay: StateOverlay, address: Uint8Array, amount: bigint): Promise<void> {
  const key = keccak256(address);
  const cur = await overlay.get(key);
  await overlay.setFields(key, { balance: (cur?.balance ?? 0n) + amount }, `0x${Buffer.from(address).toString('hex')}`);
}

/**
 * Changes made after the transactions: proof-of-work rewards (block and uncles) and withdrawals.
 * Throws when the block needs what only execution can give (EIP-7002/7251 request dequeues),
 * unless the chain makes no request calls (`noRequests`: OP-stack from Isthmus, op-stack.ts).
 */
export async function applyPostTransactions(
  overlay: StateOverlay,
  common: Common,
  h: HeaderRecord,
  uncles: HeaderRecord[],
  withdrawals: Uint8Array[][] | undefined,
  noRequests = false,
): Promise<void> {
  const c = forkOf(common, h);
  if (c.consensusType() === ConsensusType.ProofOfWork) {
    const reward = c.param('minerReward');
    for (const u of uncles) {
      const r = ((8n - (h.number - u.number)) * reward) / 8n;
      if (r > 0n) await addBalance(overlay, u.coinbase, r);
    }
    await addBalance(overlay, h.coinbase, reward + (reward / 32n) * BigInt(uncles.length));
  }
  for (const w of withdrawals ?? []) {
    const amount = bytesToBigInt(w[3] as Uint8Array) * GWEI;
    if (amount > 0n) await addBalance(overlay, w[2] as Uint8Array, amount);
  }
  if (
    !noRequests &&
    c.isActivatedEIP(7002) &&
    ((await hasCode(overlay, WITHDRAWAL_REQUESTS)) || (await hasCode(overlay, CONSOLIDATION_REQUESTS)))
  ) {
    throw new UnsupportedBlockLevelChange(
      'the EIP-7002/7251 request contracts change state at the end of every block, which per-transaction traces do not show; replicate this chain from a chainnode primary',
    );
  }
}

/** A block needs a block-level change this replication source cannot give. */
export class UnsupportedBlockLevelChange extends Error {}

const L1_BLOCK = hexToBytes('0x4200000000000000000000000000000000000015');
/** The L1 fee vault and the operator fee vault. */
const ZERO_CREDITED_VAULTS = [
  '0x420000000000000000000000000000000000001a',
  '0x420000000000000000000000000000000000001b',
];

/**
 * anvil's OP-stack mode (anvil 1.7.1 --network optimism) reads the L1 fee parameters from the
 * L1Block predeploy's storage for every non-deposit transaction and commits what it read to its
 * state trie: the L1Block account (created empty when absent) with zero-valued leaves at the
 * slots it read (1, 3, 5, 7 and 8, found with eth_getProof on anvil 1.7.1), and the L1 fee and
 * operator fee vaults credited 0 (created empty). None of it is in a transaction trace, and
 * op-geth writes none of it (its L1Block values come from the L1-attributes deposit, which
 * traces show).
 */
export async function applyAnvilOpStackReads(overlay: StateOverlay, txTypes: readonly number[]): Promise<void> {
  if (!txTypes.some((t) => t !== 0x7e)) return;
  const slots = [1n, 3n, 5n, 7n, 8n];
  const key = keccak256(L1_BLOCK);
  for (const s of slots) await overlay.keepZeroLeaf(key, slotKey(s), '0x4200000000000000000000000000000000000015');
  for (const v of ZERO_CREDITED_VAULTS) {
    const key = keccak256(hexToBytes(v as `0x${string}`));
    if ((await overlay.get(key)) === undefined) await overlay.setFields(key, {}, v);
  }
}
