// A replica's receipts from an upstream, raw (debug_getRawReceipts) or JSON (eth_getBlockReceipts):
// a log whose address, topics or data have the wrong shape is refused at decoding, whatever the
// receipts root says (a self-consistent lie commits to them).
import { RLP } from '@ethereumjs/rlp';
import { receiptFromJson, receiptFromRaw } from '../src/replicate/envelopes.js';

const bytes = (n: number, fill = 1): Uint8Array => new Uint8Array(n).fill(fill);
const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;

/** A typed (EIP-1559) receipt's encoding with the given logs. */
function raw(logs: unknown[]): Uint8Array {
  const body = RLP.encode([Uint8Array.of(1), Uint8Array.of(0x52, 0x08), bytes(256, 0), logs] as never);
  const out = new Uint8Array(body.length + 1);
  out[0] = 2;
  out.set(body, 1);
  return out;
}

const json = (logs: unknown[]) => ({ type: '0x2', status: '0x1', cumulativeGasUsed: '0x5208', logs });
const jsonLog = (address: Uint8Array, topics: Uint8Array[], data: Uint8Array) => ({
  address: hex(address),
  topics: topics.map(hex),
  data: hex(data),
});

test('well-formed logs decode, from the raw encoding and from JSON alike', () => {
  const logs: [Uint8Array, Uint8Array[], Uint8Array][] = [
    [bytes(20), [], new Uint8Array(0)],
    [bytes(20, 2), [bytes(32, 3), bytes(32, 4), bytes(32, 5), bytes(32, 6)], bytes(70, 7)],
  ];
  const fromRaw = receiptFromRaw(raw(logs));
  const fromJson = receiptFromJson(json(logs.map(([a, t, d]) => jsonLog(a, t, d))));
  for (const r of [fromRaw, fromJson]) {
    expect(r.type).toBe(2);
    expect(r.cumulativeGasUsed).toBe(21000n);
    expect(r.logs.map((l) => [hex(l.address), l.topics.map(hex), hex(l.data)])).toEqual(
      logs.map(([a, t, d]) => [hex(a), t.map(hex), hex(d)]),
    );
  }
});

test('a log of the wrong shape is refused: address not 20 bytes, a topic not 32, over 4 topics', () => {
  const bad: [string, Uint8Array, Uint8Array[], RegExp][] = [
    ['19-byte address', bytes(19), [], /log address is not 20 bytes/],
    ['21-byte address', bytes(21), [bytes(32)], /log address is not 20 bytes/],
    ['31-byte topic', bytes(20), [bytes(31)], /log topic is not 32 bytes/],
    ['five topics', bytes(20), Array.from({ length: 5 }, () => bytes(32)), /at most 4/],
  ];
  for (const [, address, topics, message] of bad) {
    expect(() => receiptFromRaw(raw([[address, topics, bytes(3)]]))).toThrow(message);
    expect(() => receiptFromJson(json([jsonLog(address, topics, bytes(3))]))).toThrow(message);
  }
  // Nested where bytes belong, and logs that are not lists or objects.
  expect(() => receiptFromRaw(raw([[bytes(20), [[bytes(32)]], bytes(1)]]))).toThrow(/log topic is not 32 bytes/);
  expect(() => receiptFromRaw(raw([[bytes(20), [], [bytes(1)]]]))).toThrow(/log data is not bytes/);
  expect(() => receiptFromRaw(raw([bytes(20)]))).toThrow(/receipt log is malformed/);
  expect(() => receiptFromJson(json([null]))).toThrow(/log is not an object/);
});
