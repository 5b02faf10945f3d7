// Stand-in for @chainnode/core's receipt encoding until it lands there.
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/store';

const DEPOSIT_TX_TYPE = 0x7e;

export interface ReceiptFields {
  type: number;
  statusOrState: Uint8Array;
  cumulativeGasUsed: bigint;
  logs: { address: Uint8Array; topics: Uint8Array[]; data: Uint8Array }[];
  bloom?: Uint8Array;
  depositNonce?: bigint | undefined;
  depositReceiptVersion?: bigint | undefined;
}

export function logsBloomOf(logs: ReceiptFields['logs']): Uint8Array {
  const bloom = new Uint8Array(256);
  const add = (v: Uint8Array) => {
    const h = keccak256(v);
    for (let i = 0; i < 6; i += 2) {
      const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
      const idx = 255 - (bit >> 3);
      bloom[idx] = (bloom[idx] as number) | (1 << (bit & 7));
    }
  };
  for (const l of logs) {
    add(l.address);
    for (const t of l.topics) add(t);
  }
  return bloom;
}

export function encodeReceipt(r: ReceiptFields): Uint8Array {
  const fields: unknown[] = [
    r.statusOrState,
    bigIntToUnpaddedBytes(r.cumulativeGasUsed),
    r.bloom ?? logsBloomOf(r.logs),
    r.logs.map((l) => [l.address, l.topics, l.data]),
  ];
  if (r.type === DEPOSIT_TX_TYPE) {
    if (r.depositNonce !== undefined) fields.push(bigIntToUnpaddedBytes(r.depositNonce));
    if (r.depositReceiptVersion !== undefined) fields.push(bigIntToUnpaddedBytes(r.depositReceiptVersion));
  }
  const body = RLP.encode(fields as never);
  if (r.type === 0) return body;
  const out = new Uint8Array(body.length + 1);
  out[0] = r.type;
  out.set(body, 1);
  return out;
}
