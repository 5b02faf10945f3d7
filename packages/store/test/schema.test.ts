import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { RLP } from '@ethereumjs/rlp';
import {
  LOG_INDEX_CHUNK,
  OPEN_CHUNK,
  Prefix,
  bigUintCodec,
  blockLogRangeCodec,
  bodyCodec,
  bodyRowKeyCodec,
  fixedListCodec,
  headCodec,
  logCodec,
  logIndexKeyCodec,
  logIndexKeyLength,
  writeLogIndexKey,
  postingCodec,
  receiptsCodec,
  tables,
  txHashKeyCodec,
  txLocationCodec,
  u64Codec,
} from '../src/schema/index.js';
import type { Codec, StoredLog, StoredReceipt } from '../src/schema/index.js';
import { rng } from './random.js';
import { rlpItem, rlpItemEnd } from '../src/schema/rlp.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const fill = (byte: number, n: number) => new Uint8Array(n).fill(byte);

function roundTrip<T>(codec: Codec<T>, value: T, expectedHex: string): void {
  const bytes = codec.encode(value);
  expect(hex(bytes)).toBe(expectedHex);
  expect(codec.decode(bytes)).toEqual(value);
}

/**
 * Log records with lengths around the RLP boundaries: single bytes below/above 0x80, 55/56-byte
 * strings and lists, multi-byte length prefixes; numbers 0, 1..127, 128, multi-byte, above 2^32.
 * Every block number with every index and every data length.
 */
function logsOfEveryLengthClass(): StoredLog[] {
  const numbers = [0n, 1n, 127n, 128n, 255n, 256n, 65_535n, 2n ** 32n + 5n, 2n ** 53n - 1n, 2n ** 60n];
  const indexes = [0, 1, 127, 128, 300, 70_000];
  const datas = [0, 1, 55, 56, 255, 256, 70_000]
    .flatMap((n) => [fill(0x7f, n), fill(0x80, n)])
    .concat([Uint8Array.of(0), Uint8Array.of(0x81)]);
  const logs: StoredLog[] = [];
  for (const blockNumber of numbers) {
    for (const [k, txIndex] of indexes.entries()) {
      for (const [j, data] of datas.entries()) {
        const topics = Array.from({ length: (k + j) % 5 }, (_, t) => fill(t * 17 + 1, 32));
        const logIndex = indexes[(k + j) % indexes.length] as number;
        logs.push({ blockNumber, txIndex, logIndex, address: fill(0x11, 20), topics, data });
      }
    }
  }
  return logs;
}

describe('key-schema codecs: round trip and exact bytes', () => {
  test('u64 is fixed-width big-endian', () => {
    roundTrip(u64Codec, 0x0102n, '0000000000000102');
    roundTrip(u64Codec, 2n ** 64n - 1n, 'ffffffffffffffff');
    expect(() => u64Codec.encode(2n ** 64n)).toThrow(RangeError);
  });
  test('tx location: varint(number) ++ varint(index); 12 bytes: the fixed number(8) ++ index(4)', () => {
    roundTrip(txLocationCodec, { number: 5n, index: 3 }, '0503');
    roundTrip(txLocationCodec, { number: 300n, index: 128 }, 'ac028001');
    roundTrip(txLocationCodec, { number: 21_000_000n, index: 245 }, 'c0de810af501');
    // Where the varints would not be shorter, the fixed form.
    roundTrip(txLocationCodec, { number: 2n ** 53n, index: 3 }, '002000000000000000000003');
    roundTrip(txLocationCodec, { number: 2n ** 49n, index: 2 ** 31 }, '000200000000000080000000');
    expect(txLocationCodec.decode(Buffer.from('000000000000000500000003', 'hex'))).toEqual({ number: 5n, index: 3 });
    expect(() => txLocationCodec.decode(Buffer.from('050300', 'hex'))).toThrow('tx location: 1 bytes past');
    expect(() => txLocationCodec.decode(Buffer.from('05', 'hex'))).toThrow('tx location: bad varint');
  });
  test('tx hash key: the first 16 bytes of the 32-byte hash', () => {
    const hash = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
    expect(Buffer.from(txHashKeyCodec.encode(hash)).toString('hex')).toBe(hash.subarray(0, 16).toString('hex'));
    expect(Buffer.from(tables.txLookupShort.key(hash)).toString('hex')).toBe(
      `20${hash.subarray(0, 16).toString('hex')}`,
    );
    expect(() => txHashKeyCodec.encode(hash.subarray(0, 16))).toThrow('hash: expected 32 bytes, got 16');
    expect(() => txHashKeyCodec.decode(hash)).toThrow('tx hash key: expected 16 bytes, got 32');
  });
  test('block log range: firstLogId(8) ++ count(4)', () => {
    roundTrip(blockLogRangeCodec, { firstLogId: 256n, count: 2 }, '000000000000010000000002');
  });
  test('head pointer: number(8) ++ hash(32)', () => {
    roundTrip(headCodec, { number: 1n, hash: fill(0xaa, 32) }, `0000000000000001${'aa'.repeat(32)}`);
  });
  test('total difficulty: minimal big-endian', () => {
    roundTrip(bigUintCodec, 0n, '');
    roundTrip(bigUintCodec, 0x1234n, '1234');
    roundTrip(bigUintCodec, 0x10000n, '010000');
  });
  test('posting list: LEB128 deltas', () => {
    roundTrip(postingCodec, [1, 3, 200], '0102c501');
    roundTrip(postingCodec, [0, 1], '0001');
    roundTrip(postingCodec, [2 ** 40], '8080808080' + '20');
    roundTrip(postingCodec, [2 ** 53 - 2, 2 ** 53 - 1], 'feffffffffffff0f' + '01');
    expect(() => postingCodec.encode([3, 3])).toThrow(RangeError);
    expect(() => postingCodec.encode([2 ** 53])).toThrow(RangeError);
    expect(() => postingCodec.decode(Uint8Array.of(0x80))).toThrow(RangeError);
  });
  test('receipts: RLP [[type, status, cumulativeGas]]', () => {
    roundTrip(
      receiptsCodec,
      [{ type: 2, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 21000n }],
      'c6c50201825208',
    );
  });
  test('receipts: OP deposit fields trail the item only when present; an older row still reads', () => {
    // Bytes written by hand: [[0x7e, 1, 21000, 7, 1], [0x7e, 1, 42000, 8], [2, 1, 63000]].
    const rows = `d5${'c7' + '7e01825208' + '0701'}${'c6' + '7e0182a410' + '08'}${'c5' + '020182f618'}`;
    roundTrip(
      receiptsCodec,
      [
        {
          type: 0x7e,
          statusOrState: Uint8Array.of(1),
          cumulativeGasUsed: 21000n,
          depositNonce: 7n,
          depositReceiptVersion: 1n,
        },
        { type: 0x7e, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 42000n, depositNonce: 8n },
        { type: 2, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 63000n },
      ],
      rows,
    );
    // A row as the store wrote it before the deposit fields existed: three items per receipt.
    const old = RLP.encode([
      [0, Uint8Array.of(1), 21000],
      [2, new Uint8Array(0), 50000],
    ]);
    expect(receiptsCodec.decode(old)).toEqual([
      { type: 0, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 21000n },
      { type: 2, statusOrState: new Uint8Array(0), cumulativeGasUsed: 50000n },
    ]);
    expect(() =>
      receiptsCodec.encode([
        { type: 0x7e, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 1n, depositReceiptVersion: 1n },
      ]),
    ).toThrow('depositReceiptVersion without depositNonce');
  });
  test("receipts: the hand-written bytes are @ethereumjs/rlp's on random receipts", () => {
    const next = rng(7);
    const uint = (): bigint => {
      const bits = [0, 7, 8, 16, 31, 53, 64, 80][next(8)] as number;
      let v = 0n;
      for (let i = 0; i < bits; i++) v = (v << 1n) | BigInt(next(2));
      return v;
    };
    const bytes = (n: number) => Uint8Array.from({ length: n }, () => next(256));
    for (let round = 0; round < 200; round++) {
      const receipts: StoredReceipt[] = Array.from({ length: next(40) }, () => {
        const kind = next(4);
        const r: StoredReceipt = {
          type: [0, 1, 2, 3, 4, 0x7e][next(6)] as number,
          // status 0 or 1, an empty status, or a pre-Byzantium state root
          statusOrState: kind === 0 ? bytes(32) : kind === 1 ? new Uint8Array(0) : Uint8Array.of(next(2)),
          cumulativeGasUsed: uint(),
        };
        if (next(3) === 0) {
          r.depositNonce = uint();
          if (next(2) === 0) r.depositReceiptVersion = uint();
        }
        return r;
      });
      const items = receipts.map((r) => [
        r.type,
        r.statusOrState,
        r.cumulativeGasUsed,
        ...(r.depositNonce === undefined ? [] : [r.depositNonce]),
        ...(r.depositReceiptVersion === undefined ? [] : [r.depositReceiptVersion]),
      ]);
      const want = Buffer.from(RLP.encode(items)).toString('hex');
      expect([round, Buffer.from(receiptsCodec.encode(receipts)).toString('hex')]).toEqual([round, want]);
      expect(receiptsCodec.decode(receiptsCodec.encode(receipts))).toEqual(receipts);
    }
    expect(() => receiptsCodec.encode([{ type: 0, statusOrState: Uint8Array.of(1), cumulativeGasUsed: -1n }])).toThrow(
      RangeError,
    );
  });
  test('log record: RLP [number, txIndex, logIndex, address, topics, data]', () => {
    roundTrip(
      logCodec,
      {
        blockNumber: 1n,
        txIndex: 0,
        logIndex: 0,
        address: fill(0x11, 20),
        topics: [fill(0x22, 32)],
        data: Uint8Array.of(0x33),
      },
      `f83b01808094${'11'.repeat(20)}e1a0${'22'.repeat(32)}33`,
    );
  });
  test('log record: the hand-written RLP equals RLP.encode and decodes back, for every length class', () => {
    const logs = logsOfEveryLengthClass();
    for (const log of logs) {
      const bytes = logCodec.encode(log);
      expect(hex(bytes)).toBe(
        hex(RLP.encode([log.blockNumber, log.txIndex, log.logIndex, log.address, log.topics, log.data])),
      );
      // The decoded record equals the log: its data compared as bytes (hex text, one string
      // compare, where toEqual walks a 70,000-byte array element by element), the rest as values.
      const { data, ...rest } = logCodec.decode(bytes);
      expect(data).toBeInstanceOf(Uint8Array);
      expect(hex(data)).toBe(hex(log.data));
      expect(rest).toEqual({ ...log, data: undefined });
    }
    expect(logs.length).toBe(10 * 6 * 16);
    expect(() => logCodec.decode(Uint8Array.of(0xc3, 0x01, 0x02))).toThrow(RangeError); // truncated
  });
  test('body: RLP [size, txCount, uncles(, withdrawals)]; transactions inline (an earlier release) read', () => {
    roundTrip(bodyCodec, { size: 5, txCount: 1, uncles: [] }, 'c30501c0');
    roundTrip(
      bodyCodec,
      { size: 5, txCount: 0, uncles: [], withdrawals: [[Uint8Array.of(1), Uint8Array.of(2)]] },
      'c70580c0c3c20102',
    );
    // [size, [tx..], uncles] as an earlier release wrote it: the transactions and their count.
    expect(bodyCodec.decode(Uint8Array.from(Buffer.from('c605c3820102c0', 'hex')))).toEqual({
      size: 5,
      txCount: 1,
      inline: [Uint8Array.of(1, 2)],
      uncles: [],
    });
    roundTrip(bodyRowKeyCodec, { hash: fill(0xab, 32), row: 0x0102 }, `${'ab'.repeat(32)}0102`);
    expect(() => bodyRowKeyCodec.encode({ hash: fill(0xab, 32), row: 0x10000 })).toThrow(RangeError);
  });
  test('rlpItemEnd: the end rlpItem and RLP.encode give, strings and lists around each length boundary', () => {
    const items: (Uint8Array | Uint8Array[])[] = [];
    for (const n of [0, 1, 2, 55, 56, 57, 255, 256, 65_536]) {
      items.push(
        fill(0x7f, n),
        fill(0x80, n),
        Array.from({ length: Math.min(n, 300) }, () => fill(0x01, 3)),
      );
      if (n === 1) items.push(Uint8Array.of(0x00), Uint8Array.of(0x7f));
    }
    items.push(Array.from({ length: 30 }, () => fill(0x02, 2))); // a list of 90 bytes: long form
    const row = RLP.encode(items);
    const list = rlpItem(row, 0);
    let at = list.start;
    for (const item of items) {
      const end = rlpItemEnd(row, at);
      expect([end, rlpItem(row, at).end]).toEqual([at + RLP.encode(item).length, at + RLP.encode(item).length]);
      at = end;
    }
    expect(at).toBe(row.length);
  });
  test('log index key: kind ++ value ++ lastLogId(8), the open chunk last', () => {
    roundTrip(
      logIndexKeyCodec,
      { kind: 0x10, value: fill(0xab, 20), lastLogId: BigInt(LOG_INDEX_CHUNK) },
      `10${'ab'.repeat(20)}0000000000000400`,
    );
    roundTrip(
      logIndexKeyCodec,
      { kind: 0x02, value: fill(0xcd, 32), lastLogId: OPEN_CHUNK },
      `02${'cd'.repeat(32)}ffffffffffffffff`,
    );
  });
  test('writeLogIndexKey (writer and reader) gives the LogIndex table key', () => {
    for (const [kind, value, last] of [
      [0x10, fill(0xab, 20), LOG_INDEX_CHUNK],
      [0x03, fill(0x01, 32), 2 ** 40 + 7],
      [0x00, fill(0xcd, 32), undefined],
    ] as const) {
      const out = new Uint8Array(logIndexKeyLength(value.length));
      const key = tables.logIndex.key({ kind, value, lastLogId: last === undefined ? OPEN_CHUNK : BigInt(last) });
      expect(Buffer.from(writeLogIndexKey(out, kind, value, last, Prefix.LogIndex)).toString('hex')).toBe(
        Buffer.from(key).toString('hex'),
      );
      expect(key[0]).toBe(0x0d);
    }
  });
  test('fixed lists (senders, tx hashes) concatenate', () => {
    roundTrip(fixedListCodec(20), [fill(1, 20), fill(2, 20)], '01'.repeat(20) + '02'.repeat(20));
    expect(() => fixedListCodec(20).decode(new Uint8Array(21))).toThrow(RangeError);
  });
  test('table keys carry the one-byte prefix', () => {
    expect(hex(tables.canonical.key(1n))).toBe('020000000000000001');
    expect(hex(tables.meta.key('head'))).toBe('0168656164');
    const prefixes = Object.values(Prefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    expect(new Set(Object.values(tables).map((t) => t.prefix)).size).toBe(Object.keys(tables).length);
  });
});

describe('typed table range scans', () => {
  let dir: string;
  let db: Level<Uint8Array, Uint8Array>;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'schema-test-'));
    db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
  });
  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('are clamped to the table prefix and ordered numerically', async () => {
    const batch = db.batch();
    for (const n of [1n, 2n, 256n, 70000n]) tables.canonical.put(batch, n, fill(Number(n % 200n), 32));
    // Neighbouring tables (prefixes 0x01 and 0x03) must not leak into a Canonical (0x02) scan.
    tables.meta.put(batch, 'zzz', Uint8Array.of(1));
    tables.hashToNumber.put(batch, fill(0, 32), 7n);
    await batch.write();
    const all: bigint[] = [];
    for await (const [n] of tables.canonical.range(db)) all.push(n);
    expect(all).toEqual([1n, 2n, 256n, 70000n]);
    const some: bigint[] = [];
    for await (const [n] of tables.canonical.range(db, { gte: 2n, lt: 70000n })) some.push(n);
    expect(some).toEqual([2n, 256n]);
    const rev: bigint[] = [];
    for await (const [n] of tables.canonical.range(db, { lte: 256n, reverse: true, limit: 2 })) rev.push(n);
    expect(rev).toEqual([256n, 2n]);
    expect(await tables.canonical.get(db, 3n)).toBeUndefined();
  });
});
