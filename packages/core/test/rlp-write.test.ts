// The one-allocation RLP writers (rlp-write.ts) against @ethereumjs/rlp, the encoder they stand in
// for: random nested items (lengths across every header size: 0, 1 byte under and over 0x80, 55
// and 56, long strings), integers across every width, typed envelopes, and receipts of every
// type (with many logs and large data) encoded by encodeReceipt as RLP.encode does.
import { RLP } from '@ethereumjs/rlp';
import type { Input } from '@ethereumjs/rlp';
import { logsBloomOf } from '../src/bloom.js';
import { encodeReceipt } from '../src/receipt-encoding.js';
import type { ConsensusReceipt } from '../src/receipt-encoding.js';
import { encodeNested, encodeTyped, uintBytes } from '../src/rlp-write.js';
import type { Nested } from '../src/rlp-write.js';

let seed = 12345;
const rand = (n: number): number => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return (seed >>> 8) % n;
};
const LENGTHS = [0, 1, 2, 31, 32, 54, 55, 56, 57, 255, 256, 1000, 70_000];
const bytes = (): Uint8Array => {
  const n = LENGTHS[rand(LENGTHS.length)] as number;
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rand(256);
  if (n === 1 && rand(2) === 0) b[0] = rand(0x80); // a single byte under 0x80 is its own encoding
  return b;
};
const item = (depth: number): Nested =>
  depth === 0 || rand(3) === 0 ? bytes() : Array.from({ length: rand(6) }, () => item(depth - 1));

test('encodeNested and encodeTyped equal RLP.encode on random nested items', () => {
  for (let i = 0; i < 400; i++) {
    const v = item(4);
    expect(Buffer.from(encodeNested(v)).equals(Buffer.from(RLP.encode(v as Input)))).toBe(true);
    if (Array.isArray(v)) {
      const typed = encodeTyped(2, v);
      expect(typed[0]).toBe(2);
      expect(Buffer.from(typed.subarray(1)).equals(Buffer.from(RLP.encode(v as Input)))).toBe(true);
    }
  }
});

test('uintBytes is the minimal big-endian integer RLP.encode writes, at every width', () => {
  const values = [0n, 1n, 0x7fn, 0x80n, 0xffn, 0x100n, 0xffffn, 0x10000n, 0xffffffn, 0x1000000n, 0xffffffffn];
  for (let w = 5; w <= 33; w++) values.push((1n << BigInt(8 * w - 1)) + 3n, (1n << BigInt(8 * w)) - 1n);
  for (const v of values) {
    if (v >= 1n << 256n) continue;
    expect(Buffer.from(encodeNested(uintBytes(v))).equals(Buffer.from(RLP.encode(v)))).toBe(true);
  }
  expect(() => uintBytes(-1n)).toThrow(RangeError);
});

test('encodeReceipt equals RLP.encode of its fields for every type, many logs and large data', () => {
  for (let i = 0; i < 200; i++) {
    const type = [0, 1, 2, 3, 4, 0x7e][rand(6)] as number;
    const logs = Array.from({ length: rand(3) === 0 ? rand(60) : rand(4) }, () => ({
      address: new Uint8Array(20).fill(rand(256)),
      topics: Array.from({ length: rand(5) }, () => new Uint8Array(32).fill(rand(256))),
      data: bytes(),
    }));
    const r: ConsensusReceipt = {
      type,
      statusOrState: rand(2) === 0 ? Uint8Array.of(1) : Uint8Array.of(0),
      cumulativeGasUsed: BigInt(rand(2 ** 30)) * BigInt(1 + rand(1000)),
      logs,
    };
    if (type === 0x7e && rand(2) === 0) r.depositNonce = BigInt(rand(1000));
    if (type === 0x7e && rand(3) === 0) r.depositReceiptVersion = 1n;
    const fields: Input[] = [
      r.statusOrState[0] === 0 ? new Uint8Array(0) : r.statusOrState,
      r.cumulativeGasUsed,
      logsBloomOf(logs),
      logs.map((l) => [l.address, l.topics, l.data]),
    ];
    const enc = encodeReceipt(r);
    const body = type === 0 ? enc : enc.subarray(1);
    if (r.depositNonce !== undefined || r.depositReceiptVersion !== undefined) fields.push(r.depositNonce ?? 0n);
    if (r.depositReceiptVersion !== undefined) fields.push(r.depositReceiptVersion);
    expect(Buffer.from(body).equals(Buffer.from(RLP.encode(fields)))).toBe(true);
    if (type !== 0) expect(enc[0]).toBe(type);
  }
});
