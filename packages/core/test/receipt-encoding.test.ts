// The receipt encoding's shape, field by field (the real-chain checks, receiptsRoot and
// logsBloom of every block of both bundled chains and geth's recorded debug_getRawReceipts, are in
// packages/rpc/test/raw.test.ts and rpc-compat.test.ts): the status as consensus writes it, the
// type byte of typed receipts, logs as [address, topics, data], and the OP-stack deposit receipt's
// optional trailing fields as op-geth's rlp:"optional" writes them.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { toData } from '../src/hex.js';
import { bloomMatcher, bloomUnion, logsBloomOf } from '../src/bloom.js';
import { encodeReceipt } from '../src/receipt-encoding.js';
import type { ConsensusReceipt } from '../src/receipt-encoding.js';

const fill = (byte: number, n: number): Uint8Array => new Uint8Array(n).fill(byte);
const log = { address: fill(0xaa, 20), topics: [fill(0x01, 32), fill(0x02, 32)], data: Uint8Array.of(1, 2, 3) };
const base: ConsensusReceipt = { type: 0, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 21_000n, logs: [log] };

type Nested = Uint8Array | Nested[];
const fields = (enc: Uint8Array): Nested[] => RLP.decode(enc[0]! < 0xc0 ? enc.subarray(1) : enc) as Nested[];

test('legacy: rlp([status, cumulativeGasUsed, bloom, logs]), status 0 as the empty string', () => {
  const enc = encodeReceipt(base);
  expect(enc[0]! >= 0xc0).toBe(true);
  const [status, gas, bloom, logs] = fields(enc) as [Uint8Array, Uint8Array, Uint8Array, Nested[]];
  expect(toData(status)).toBe('0x01');
  expect(BigInt(toData(gas))).toBe(21_000n);
  expect(toData(bloom)).toBe(toData(logsBloomOf([log])));
  expect(logs).toEqual([[log.address, log.topics, log.data]]);
  // Failure: the store's one 0x00 byte and the empty string encode alike, as the empty string.
  for (const s of [Uint8Array.of(0), new Uint8Array()]) {
    const failed = encodeReceipt({ ...base, statusOrState: s, logs: [] });
    expect((fields(failed)[0] as Uint8Array).length).toBe(0);
  }
  // Pre-Byzantium: the 32-byte post-state root as it is.
  const root = fill(0x5a, 32);
  expect(toData(fields(encodeReceipt({ ...base, statusOrState: root }))[0] as Uint8Array)).toBe(toData(root));
  // A given bloom is used as given.
  const given = fill(0xff, 256);
  expect(toData(fields(encodeReceipt({ ...base, bloom: given }))[2] as Uint8Array)).toBe(toData(given));
  expect(() => encodeReceipt({ ...base, bloom: fill(0, 255) })).toThrow('bloom must be 256 bytes');
});

test('typed: the type byte, then the same RLP', () => {
  const legacy = encodeReceipt(base);
  for (const type of [1, 2, 3, 4]) {
    const enc = encodeReceipt({ ...base, type });
    expect(enc[0]).toBe(type);
    expect(toData(enc.subarray(1))).toBe(toData(legacy));
  }
});

test('OP deposits: depositNonce, then depositReceiptVersion, when present; other types never', () => {
  const dep: ConsensusReceipt = { ...base, type: 0x7e };
  expect(fields(encodeReceipt(dep)).length).toBe(4); // before Regolith: no nonce
  const withNonce = fields(encodeReceipt({ ...dep, depositNonce: 0x1234n }));
  expect(withNonce.length).toBe(5);
  expect(toData(withNonce[4] as Uint8Array)).toBe('0x1234');
  const zero = fields(encodeReceipt({ ...dep, depositNonce: 0n }));
  expect(toData(zero[4] as Uint8Array)).toBe('0x'); // 0 is the empty string
  const both = fields(encodeReceipt({ ...dep, depositNonce: 7n, depositReceiptVersion: 1n }));
  expect(both.slice(4).map((f) => toData(f as Uint8Array))).toEqual(['0x07', '0x01']);
  // A version without a nonce still writes the nonce (zero): optional fields are positional.
  const versionOnly = fields(encodeReceipt({ ...dep, depositReceiptVersion: 1n }));
  expect(versionOnly.slice(4).map((f) => toData(f as Uint8Array))).toEqual(['0x', '0x01']);
  expect(encodeReceipt({ ...dep, depositNonce: 7n })[0]).toBe(0x7e);
  expect(fields(encodeReceipt({ ...base, type: 2, depositNonce: 7n, depositReceiptVersion: 1n })).length).toBe(4);
});

test('logsBloomOf: three bits per address and topic, from their keccak', () => {
  expect(logsBloomOf([]).every((b) => b === 0)).toBe(true);
  const bloom = logsBloomOf([log]);
  // Every bit set is one of the 3 x 3 the address and the two topics name, and each of those is set.
  const want = new Set<number>();
  for (const v of [log.address, ...log.topics]) {
    const h = keccak256(v);
    for (const i of [0, 2, 4]) want.add(((h[i]! << 8) | h[i + 1]!) & 2047);
  }
  const got = new Set<number>();
  for (let bit = 0; bit < 2048; bit++) if ((bloom[255 - (bit >> 3)]! >> (bit & 7)) & 1) got.add(bit);
  expect([...got].sort((a, b) => a - b)).toEqual([...want].sort((a, b) => a - b));
});

test('logsBloomOf: the same bits through its memo of values seen, past its size and for views', () => {
  // Independent: each value's three bits from its keccak, OR-ed by hand.
  const direct = (values: Uint8Array[]): Uint8Array => {
    const out = new Uint8Array(256);
    for (const v of values) {
      const h = keccak256(v);
      for (const i of [0, 2, 4]) {
        const bit = ((h[i]! << 8) | h[i + 1]!) & 2047;
        out[255 - (bit >> 3)]! |= 1 << (bit & 7);
      }
    }
    return out;
  };
  // 10,000 distinct addresses and topics (more than the memo holds), asked twice, some as views
  // into a larger array, a 20-byte value and a 32-byte one that share their first 20 bytes.
  const big = new Uint8Array(32 * 10_000);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
  const differing: string[] = [];
  for (const pass of [0, 1])
    for (let i = 0; i < 10_000; i++) {
      const topic = big.subarray(32 * i, 32 * i + 32);
      const address = topic.slice(0, 20);
      const got = logsBloomOf([{ address, topics: [topic] }]);
      if (Buffer.compare(got, direct([address, topic])) !== 0) differing.push(`${pass}:${i}`);
    }
  expect(differing).toEqual([]);
});

test('bloomMatcher: every constraint needs one value whose bits are set; bloomUnion ORs blooms', () => {
  const other = { ...log, address: new Uint8Array(20).fill(9), topics: [] };
  const bloom = logsBloomOf([log]);
  const union = bloomUnion([bloom, logsBloomOf([other])]);
  expect(toData(union)).toBe(toData(logsBloomOf([log, other])));
  expect(bloomMatcher([])(new Uint8Array(256))).toBe(true);
  expect(bloomMatcher([[log.address], [log.topics[0]!]])(bloom)).toBe(true);
  expect(bloomMatcher([[other.address, log.address]])(bloom)).toBe(true);
  expect(bloomMatcher([[other.address]])(bloom)).toBe(false);
  expect(bloomMatcher([[log.address], [other.address]])(union)).toBe(true);
  expect(bloomMatcher([[log.address], [other.address]])(bloom)).toBe(false);
});
