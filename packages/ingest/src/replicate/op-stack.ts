// The OP-stack rules a replica checks beyond Ethereum's, as op-geth applies them
// (core/block_validator.go, core/state_processor.go) and the OP specs state them
// (specs/protocol/isthmus/exec-engine.md):
// - from Isthmus, the header's withdrawalsRoot is the L2ToL1MessagePasser's storage root in the
//   block's post-state (the body's withdrawals list stays empty), checked like the state root;
// - from Isthmus, no EIP-7002/7251 request contract is called at the end of a block and the
//   requestsHash commits to no requests (block-level.ts leaves them out).
// The EIP-2935 and EIP-4788 system writes are Ethereum's (block-level.ts): op-geth makes them
// whenever the header's fork has them (Prague, with Isthmus; Cancun, with Ecotone) and the
// contract holds code.
import { KECCAK256_RLP, hexToBytes } from '@ethereumjs/util';
import { opForkActive } from '@chainnode/core';
import { keccak256 } from '@chainnode/store';
import { checkField } from './block.js';
import type { StateOverlay } from './state.js';

const MESSAGE_PASSER = '0x4200000000000000000000000000000000000016';
/** The L2ToL1MessagePasser predeploy. */
export const MESSAGE_PASSER_ADDRESS = hexToBytes(MESSAGE_PASSER);
const MESSAGE_PASSER_KEY = keccak256(MESSAGE_PASSER_ADDRESS);

/** Whether the header of a block at `timestamp` commits the message passer's storage root as its withdrawalsRoot. */
export function withdrawalsRootIsStorageRoot(genesisJson: unknown, timestamp: bigint): boolean {
  return opForkActive(genesisJson, 'isthmus', timestamp);
}

/**
 * Claims the header's withdrawalsRoot as the message passer's storage root after the block's
 * changes (compared when the overlay commits). An absent message passer has the empty trie's
 * root, as eth_getProof states it (the spec's definition; a real chain has the predeploy from
 * genesis).
 */
export async function claimWithdrawalsRoot(
  overlay: StateOverlay,
  n: bigint,
  withdrawalsRoot: Uint8Array,
): Promise<void> {
  if ((await overlay.get(MESSAGE_PASSER_KEY)) === undefined)
    checkField(n, 'withdrawalsRoot (the L2ToL1MessagePasser storage root)', withdrawalsRoot, KECCAK256_RLP);
  else await overlay.claimStorageRoot(MESSAGE_PASSER_KEY, withdrawalsRoot, MESSAGE_PASSER);
}
