// A transaction by hash on a cache miss reads only that transaction (reader.ts loadTransaction:
// its item of the BodyTxs row holding it, read in place by trie-read.ts bodyRowTransaction, its
// sender, it alone decoded, and the block's timestamp and base fee read in place from the header
// row, headerTxFields). Checked for every transaction of both real chains (legacy to type-4
// transactions) against the transaction of the block record, the path a cached block takes; the
// scanners against the codecs' decodes for every block; a location row that points at another
// transaction (what a follower's write of another branch can leave for a moment) answers not
// found; malformed bodies throw. Bodies of an earlier release (every transaction inline, no
// BodyTxs rows) read the same, whole blocks and raw blocks too, and db convert cuts them into the
// rows an import writes, byte for byte. Location rows are keyed by half the transaction's hash;
// rows of earlier releases (the whole hash, the value in either form) read the same, and db
// convert moves them. A hash that shares its first 16 bytes with another transaction's answers
// not found.
import { RLP } from '@ethereumjs/rlp';
import { bytesEqual } from '@chainnode/core';
import { Mismatches, availableChains, datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { openDb } from '../src/db.js';
import { BODY_ROW_TXS, bodyCodec, bodyRowOf, readBodySync, tables } from '../src/schema/index.js';
import type { StoredBody } from '../src/schema/index.js';
import {
  bodyBlockFields,
  bodyHoldsTransactions,
  bodyRowTransaction,
  bodyTransaction,
  headerTxFields,
} from '../src/trie/trie-read.js';
import { convertDatadir } from '../src/upkeep/index.js';

/** A TxLookup value of the fixed form: number(8) ++ txIndex(4). */
function fixed(number: bigint, index: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeBigUInt64BE(number, 0);
  b.writeUInt32BE(index, 8);
  return b;
}

/** A record as text (bytes as hex, bigints as decimal): jest's deep equality walks typed arrays byte by byte. */
const text = (v: unknown): string =>
  JSON.stringify(v, function (this: Record<string, unknown>, k: string, x: unknown) {
    const raw = this[k]; // before a Buffer's toJSON: Buffers and Uint8Arrays alike
    return raw instanceof Uint8Array
      ? `0x${Buffer.from(raw).toString('hex')}`
      : typeof raw === 'bigint'
        ? `${raw}n`
        : x;
  });

const chains = availableChains();

test.each(chains)(
  "%s: every transaction by hash equals its block's, read alone",
  async (chain) => {
    const c = await datadirCopy(chain);
    // Two handles on one datadir are not allowed: the blocks are read first, then a fresh store asks
    // for each transaction with nothing cached but the headers its lookups load.
    const expected: {
      hash: Uint8Array;
      tx: Record<string, unknown> & { blockNumber: bigint; transactionIndex: number };
    }[] = [];
    const types = new Set<number>();
    const hashes: Uint8Array[] = [];
    const headerFields: string[] = [];
    let blocks = await LevelChainStore.open(c.dir);
    try {
      const head = (await blocks.head()).number;
      for (let n = 0n; n <= head; n++) {
        const hash = (await blocks.canonicalHash(n)) as Uint8Array;
        const block = await blocks.block(hash);
        if (block === undefined) throw new Error(`block ${n}`);
        hashes.push(hash);
        headerFields.push(
          text({
            timestamp: block.header.timestamp,
            ...(block.header.baseFeePerGas !== undefined ? { baseFeePerGas: block.header.baseFeePerGas } : {}),
          }),
        );
        block.transactions.forEach((tx, i) => {
          types.add(tx.type);
          expected.push({
            hash: tx.hash,
            tx: {
              tx,
              blockHash: hash,
              blockNumber: n,
              transactionIndex: i,
              blockTimestamp: block.header.timestamp,
              ...(block.header.baseFeePerGas !== undefined ? { baseFeePerGas: block.header.baseFeePerGas } : {}),
            },
          });
        });
      }
    } finally {
      await blocks.close();
    }
    // The body and header scanners against the codecs, every block.
    const raw = await openDb(c.dir, { create: false });
    // The rows the import wrote (Bodies, then BodyTxs in order) of the blocks rewritten below.
    const importedRows = new Map<Uint8Array, Uint8Array[]>();
    const scanned = new Mismatches();
    const want = scanned.want;
    try {
      for (const [i, hash] of hashes.entries()) {
        const at = `block ${i}`;
        want(
          `${at} header fields`,
          text(headerTxFields(tables.headers.getSync(raw, hash) as Uint8Array)),
          headerFields[i],
        );
        const body = tables.bodies.getRawSync(raw, hash) as Uint8Array;
        const decoded = bodyCodec.decode(body);
        const whole = readBodySync(raw, hash) as StoredBody;
        want(`${at} inline`, decoded.inline, undefined);
        want(`${at} holds transactions`, bodyHoldsTransactions(body), false);
        want(`${at} txCount`, decoded.txCount, whole.transactions.length);
        whole.transactions.forEach((t, j) => {
          const part = tables.bodyTxs.getRawSync(raw, { hash, row: bodyRowOf(j) }) as Uint8Array;
          want(
            `${at} tx ${j} from its row`,
            bytesEqual(bodyRowTransaction(part, j % BODY_ROW_TXS) as Uint8Array, t),
            true,
          );
        });
        // Rows 0 .. ceil(count / 16) - 1, and no more.
        const rows = Math.ceil(whole.transactions.length / BODY_ROW_TXS);
        if (rows > 0)
          want(`${at} last row held`, tables.bodyTxs.getRawSync(raw, { hash, row: rows - 1 }) !== undefined, true);
        want(`${at} row past the last`, tables.bodyTxs.getRawSync(raw, { hash, row: rows }), undefined);
        want(`${at} body's first tx`, bodyTransaction(body, 0), undefined);
        const fields = bodyBlockFields(body);
        want(`${at} size`, fields.size, decoded.size);
        want(`${at} fields' txCount`, fields.txCount, whole.transactions.length);
        want(`${at} uncles`, (RLP.decode(fields.uncles) as Uint8Array[]).length, decoded.uncles.length);
        want(`${at} withdrawals`, fields.withdrawals === undefined, decoded.withdrawals === undefined);
        // Every other block's body as an earlier release wrote it: one row, the transactions inline.
        if (i % 2 === 0 && whole.transactions.length > 0) {
          const rowsNow = [
            body,
            ...Array.from({ length: rows }, (_, r) => tables.bodyTxs.getRawSync(raw, { hash, row: r })),
          ];
          importedRows.set(hash, rowsNow as Uint8Array[]);
          const earlier = RLP.encode(
            whole.withdrawals === undefined
              ? [whole.size, whole.transactions, whole.uncles]
              : [whole.size, whole.transactions, whole.uncles, whole.withdrawals],
          );
          for (const [j, t] of whole.transactions.entries())
            want(`${at} earlier tx ${j}`, bytesEqual(bodyTransaction(earlier, j) as Uint8Array, t), true);
          want(`${at} earlier tx past the last`, bodyTransaction(earlier, whole.transactions.length), undefined);
          want(`${at} earlier fields`, text(bodyBlockFields(earlier)), text(fields));
          const old = raw.batch();
          old.put(tables.bodies.key(hash), earlier);
          for (let r = 0; r < rows; r++) old.del(tables.bodyTxs.key({ hash, row: r }));
          await old.write();
        }
      }
      expect(importedRows.size).toBeGreaterThan(3);
      // The import keyed every location row by 16 bytes, its value compact.
      for (const [i, e] of expected.entries()) {
        want(`tx ${i} row by the whole hash`, tables.txLookup.getRawSync(raw, e.hash), undefined);
        want(
          `tx ${i} compact location`,
          (tables.txLookupShort.getRawSync(raw, e.hash) as Uint8Array).length < 12,
          true,
        );
      }
      // Every other location row as earlier releases wrote it (the whole hash as the key; the value
      // in the fixed form, or the compact one): both are read.
      const batch = raw.batch();
      for (const [i, e] of expected.entries()) {
        if (i % 2 !== 0) continue;
        const loc = tables.txLookupShort.getSync(raw, e.hash) as { number: bigint; index: number };
        batch.del(tables.txLookupShort.key(e.hash));
        if (i % 4 === 0) batch.put(tables.txLookup.key(e.hash), Buffer.from(fixed(loc.number, loc.index)));
        else tables.txLookup.put(batch, e.hash, loc);
      }
      await batch.write();
      expect(scanned.first()).toEqual([]);
    } finally {
      await raw.close();
    }
    expect(expected.length).toBeGreaterThan(20);
    if (chain === 'execution-apis') expect(types.size).toBeGreaterThan(3); // legacy, 2930, 1559, blob, 7702
    blocks = await LevelChainStore.open(c.dir);
    try {
      const read = new Mismatches();
      for (const [i, e] of expected.entries()) read.want(`tx ${i}`, text(await blocks.transaction(e.hash)), text(e.tx));
      expect(read.first(3)).toEqual([]);
      expect(await blocks.transaction(new Uint8Array(32).fill(0xab))).toBeUndefined();
      // Whole blocks and raw blocks from the earlier release's bodies, as from the rows.
      for (const [hash, raws] of [...importedRows].slice(0, 8)) {
        const block = (await blocks.block(hash)) as { transactions: { hash: Uint8Array }[] };
        expect(block.transactions.length).toBe(bodyBlockFields(raws[0] as Uint8Array).txCount);
        expect(text((await blocks.rawTransaction(block.transactions.at(-1)?.hash as Uint8Array)) ?? null)).not.toBe(
          'null',
        );
        expect((await blocks.rawBlock(hash))?.length).toBe(bodyBlockFields(raws[0] as Uint8Array).size);
      }
    } finally {
      await blocks.close();
    }
    // db convert moves the earlier rows to 16-byte keys and cuts the earlier bodies into the rows
    // the import wrote, byte for byte; the answers stay.
    const converted = await convertDatadir(c.dir);
    expect(converted.txLookupRows).toBe(Math.ceil(expected.length / 2));
    expect(converted.bodyRows).toBe(importedRows.size);
    const again = await convertDatadir(c.dir);
    expect([again.txLookupRows, again.bodyRows]).toEqual([0, 0]);
    const cut = await openDb(c.dir, { create: false });
    try {
      expect(await cut.keys({ gte: Uint8Array.of(0x07), lt: Uint8Array.of(0x08) }).all()).toEqual([]);
      for (const e of expected)
        expect(tables.txLookupShort.getSync(cut, e.hash)).toEqual({
          number: e.tx.blockNumber,
          index: e.tx.transactionIndex,
        });
      for (const [hash, raws] of importedRows) {
        expect(bytesEqual(tables.bodies.getRawSync(cut, hash) as Uint8Array, raws[0] as Uint8Array)).toBe(true);
        for (let r = 1; r < raws.length; r++)
          expect(
            bytesEqual(tables.bodyTxs.getRawSync(cut, { hash, row: r - 1 }) as Uint8Array, raws[r] as Uint8Array),
          ).toBe(true);
        expect(tables.bodyTxs.getRawSync(cut, { hash, row: raws.length - 1 })).toBeUndefined();
      }
    } finally {
      await cut.close();
    }
    blocks = await LevelChainStore.open(c.dir);
    try {
      const read = new Mismatches();
      for (const [i, e] of expected.entries())
        if (i % 7 === 0) read.want(`tx ${i}`, text(await blocks.transaction(e.hash)), text(e.tx));
      expect(read.first(3)).toEqual([]);
    } finally {
      await blocks.close();
    }
    // A location row that points at the next transaction of the block answers not found (the
    // hash check), on a fresh store so the body path is the one taken.
    const [first, second] = expected as [(typeof expected)[number], (typeof expected)[number]];
    expect(second.tx.blockNumber).toBeGreaterThanOrEqual(first.tx.blockNumber);
    const db = await openDb(c.dir, { create: false });
    const batch = db.batch();
    tables.txLookupShort.put(batch, first.hash, {
      number: first.tx.blockNumber,
      index: first.tx.transactionIndex + 1,
    });
    await batch.write();
    await db.close();
    // A hash whose first 16 bytes are another transaction's finds that one's row: not found.
    const twin = Uint8Array.from(second.hash);
    twin[31] = (twin[31] as number) ^ 1;
    const moved = await LevelChainStore.open(c.dir);
    try {
      expect(await moved.transaction(first.hash)).toBeUndefined();
      expect(text(await moved.transaction(second.hash))).toBe(text(second.tx));
      expect(await moved.transaction(twin)).toBeUndefined();
      expect(await moved.rawTransaction(twin)).toBeUndefined();
      expect(await moved.rawTransaction(second.hash)).toBeDefined();
    } finally {
      await moved.close();
      await c.cleanup();
    }
  },
  240_000,
);

test('headerTxFields: before and after London; malformed headers throw', () => {
  const h32 = new Uint8Array(32);
  const items = (n: number): Uint8Array[] =>
    Array.from({ length: n }, (_, i) => (i === 11 ? Uint8Array.of(0x01, 0x02) : i === 15 ? Uint8Array.of(0x07) : h32));
  expect(headerTxFields(RLP.encode(items(15)))).toEqual({ timestamp: 0x0102n });
  expect(headerTxFields(RLP.encode(items(16)))).toEqual({ timestamp: 0x0102n, baseFeePerGas: 7n });
  expect(headerTxFields(RLP.encode(items(21)))).toEqual({ timestamp: 0x0102n, baseFeePerGas: 7n });
  expect(() => headerTxFields(RLP.encode(items(11)))).toThrow('header: fewer than 12 items');
  expect(() => headerTxFields(RLP.encode([...items(11), [h32]]))).toThrow('header: item 11 is a list');
  expect(() => headerTxFields(RLP.encode([...items(11), new Uint8Array(33)]))).toThrow(
    'header: timestamp longer than 32 bytes',
  );
  const good = RLP.encode(items(16));
  expect(() => headerTxFields(good.subarray(0, good.length - 1))).toThrow('rlp: truncated item');
  expect(() => headerTxFields(RLP.encode(h32))).toThrow('header: not one RLP list');
});

test('bodyTransaction, bodyRowTransaction: malformed bodies and rows throw', () => {
  const tx1 = Uint8Array.from([0x02, 0xc1, 0x05]);
  const tx2 = RLP.encode([1, 2, 3]);
  const good = RLP.encode([Uint8Array.of(9), [tx1, tx2], []]);
  expect(bodyTransaction(good, 0)).toEqual(tx1);
  expect(bodyTransaction(good, 1)).toEqual(tx2);
  expect(bodyTransaction(good, 2)).toBeUndefined();
  expect(bodyTransaction(RLP.encode([Uint8Array.of(9), [], []]), 0)).toBeUndefined();
  expect(() => bodyTransaction(good.subarray(0, good.length - 1), 0)).toThrow('rlp: truncated item');
  expect(() => bodyTransaction(RLP.encode(tx1), 0)).toThrow('body: not one RLP list');
  // A byte string where the list is: this release's row, the count (the transactions in BodyTxs rows).
  const counted = RLP.encode([Uint8Array.of(9), 2, []]);
  expect(bodyTransaction(counted, 0)).toBeUndefined();
  expect(bodyHoldsTransactions(counted)).toBe(false);
  expect(bodyHoldsTransactions(good)).toBe(true);
  expect(bodyBlockFields(counted).txCount).toBe(2);
  expect(() => bodyTransaction(RLP.encode([Uint8Array.of(9), [[tx1]], []]), 0)).toThrow(
    'body: a transaction is not a byte string',
  );
  const row = RLP.encode([tx1, tx2]);
  expect(bodyRowTransaction(row, 0)).toEqual(tx1);
  expect(bodyRowTransaction(row, 1)).toEqual(tx2);
  expect(bodyRowTransaction(row, 2)).toBeUndefined();
  expect(() => bodyRowTransaction(RLP.encode(tx1), 0)).toThrow('body row: not one RLP list');
  expect(() => bodyRowTransaction(RLP.encode([[tx1]]), 0)).toThrow('body row: a transaction is not a byte string');
  expect(() => bodyRowTransaction(row.subarray(0, row.length - 1), 0)).toThrow('rlp: truncated item');
});
