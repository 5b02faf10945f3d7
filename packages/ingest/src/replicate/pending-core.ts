// Stand-ins for @chainnode/core's deposit codec and receipt encoding until they land there.
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { bytesToBigInt } from '@chainnode/core';

export const DEPOSIT_TX_TYPE = 0x7e;

export interface DepositTx {
  sourceHash: Uint8Array;
  from: Uint8Array;
  to: Uint8Array | null;
  mint: bigint;
  value: bigint;
  gas: bigint;
  isSystemTx: boolean;
  data: Uint8Array;
}

export function encodeDepositTx(tx: DepositTx): Uint8Array {
  const body = RLP.encode([
    tx.sourceHash,
    tx.from,
    tx.to ?? new Uint8Array(0),
    bigIntToUnpaddedBytes(tx.mint),
    bigIntToUnpaddedBytes(tx.value),
    bigIntToUnpaddedBytes(tx.gas),
    tx.isSystemTx ? Uint8Array.of(1) : new Uint8Array(0),
    tx.data,
  ]);
  const out = new Uint8Array(body.length + 1);
  out[0] = DEPOSIT_TX_TYPE;
  out.set(body, 1);
  return out;
}

export function decodeDepositTx(bytes: Uint8Array): DepositTx {
  const f = RLP.decode(bytes.subarray(1)) as Uint8Array[];
  return {
    sourceHash: f[0] as Uint8Array,
    from: f[1] as Uint8Array,
    to: (f[2] as Uint8Array).length === 0 ? null : (f[2] as Uint8Array),
    mint: bytesToBigInt(f[3] as Uint8Array),
    value: bytesToBigInt(f[4] as Uint8Array),
    gas: bytesToBigInt(f[5] as Uint8Array),
    isSystemTx: (f[6] as Uint8Array).length > 0,
    data: f[7] as Uint8Array,
  };
}

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
