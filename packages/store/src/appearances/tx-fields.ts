// The fields of a transaction's canonical encoding that the address-appearance index needs (its
// recipient, and its nonce for the address a creation deploys), read by skipping over the RLP
// items before them: no decode of the whole transaction at import.
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@chainnode/core';
import { keccak256 } from '../keccak.js';
import { rlpItem as item } from '../schema/rlp.js';

/** Items `nonceAt` and `toAt` of the transaction's field list. */
function fields(list: Uint8Array, at: number, nonceAt: number, toAt: number): { nonce: Uint8Array; to: Uint8Array } {
  const outer = item(list, at);
  let i = outer.start;
  let nonce: Uint8Array = new Uint8Array(0);
  for (let k = 0; k <= toAt; k++) {
    const f = item(list, i);
    if (k === nonceAt) nonce = list.subarray(f.start, f.end);
    if (k === toAt) return { nonce, to: list.subarray(f.start, f.end) };
    i = f.end;
  }
  throw new RangeError('transaction: too few fields');
}

/** Field positions of (nonce, to) by transaction type: legacy, 2930, 1559, 4844, 7702. */
const POSITIONS: Record<number, [number, number]> = { 1: [1, 4], 2: [1, 5], 3: [1, 5], 4: [1, 5] };

/** OP-stack deposits: [sourceHash, from, to, ...], no nonce in the encoding. */
const DEPOSIT = 0x7e;

/**
 * The address a transaction's encoding sends to, or, for a creation, the address it deploys to
 * (from `sender` and its nonce); undefined for a creation whose address the encoding does not
 * give (an OP deposit) or a type this node does not know.
 */
export function txTarget(raw: Uint8Array, sender: Uint8Array): Uint8Array | undefined {
  const first = raw[0] as number;
  let f: { nonce: Uint8Array; to: Uint8Array };
  if (first >= 0xc0) f = fields(raw, 0, 0, 3);
  else if (first === DEPOSIT) f = { nonce: new Uint8Array(0), to: fields(raw, 1, 2, 2).to };
  else {
    const pos = POSITIONS[first];
    if (pos === undefined) return undefined;
    f = fields(raw, 1, pos[0], pos[1]);
  }
  if (f.to.length === 20) return f.to;
  if (first === DEPOSIT) return undefined;
  return keccak256(RLP.encode([sender, bytesToBigInt(f.nonce)])).subarray(12);
}
