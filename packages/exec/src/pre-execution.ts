// EIP-4788's and EIP-2935's writes at a block's start, before its transactions (geth's
// ProcessBeaconBlockRoot and ProcessParentBlockHash): what a simulated block and a re-executed
// one (traces) both run first.
import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { Address, bigIntToBytes, setLengthLeft } from '@ethereumjs/util';
import type { StoreStateManager } from './state.js';

const ZERO32 = new Uint8Array(32);
const BEACON_ROOTS = new Address(Uint8Array.from(Buffer.from('000f3df6d732807ef1319fb7b8bb8522d0beac02', 'hex')));
const HISTORY_STORAGE = new Address(Uint8Array.from(Buffer.from('0000f90827f1c53a10cb7a02335b175320002935', 'hex')));
const RING = 8191n;
const word = (n: bigint): Uint8Array => setLengthLeft(bigIntToBytes(n), 32);

/** Opens a transaction on `sm` and writes the block's beacon root and parent hash (where deployed). */
export async function preExecution(sm: StoreStateManager, common: Common, block: Block): Promise<void> {
  const h = block.header;
  sm.beginTransaction();
  if (common.isActivatedEIP(4788) && (await sm.getCode(BEACON_ROOTS)).length > 0) {
    await sm.putStorage(BEACON_ROOTS, word(h.timestamp % RING), bigIntToBytes(h.timestamp));
    await sm.putStorage(BEACON_ROOTS, word((h.timestamp % RING) + RING), h.parentBeaconBlockRoot ?? ZERO32);
  }
  if (common.isActivatedEIP(2935) && (await sm.getCode(HISTORY_STORAGE)).length > 0)
    await sm.putStorage(HISTORY_STORAGE, word((h.number - 1n) % RING), h.parentHash);
}
