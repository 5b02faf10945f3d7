// The transaction JSON the server writes as text (formatters/transaction-text.ts) against
// JSON.stringify of the object formatter (formatAnyTransaction), byte for byte: for every
// transaction of the fixture chain and of the execution-apis chain (read here from their
// chain.rlp, no import), and for random transactions of every type the node serves (legacy with
// and without EIP-155, 2930, 1559, 4844, 7702, OP-stack deposits, unknown types). Each is checked
// three ways: the block's full-transaction text written from the encodings (as the store hands
// out blocks), the same written from decoded records (blocks without encodings), and one
// transaction's text; and each one's data read alone (transactionInput) against the decoder's. An encoding the decoder refuses must not be answered from the encodings.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import {
  DEPOSIT_TX_TYPE,
  decodeTransaction,
  encodeDepositTx,
  headerFromValues,
  keccak256,
  transactionInput,
} from '@chainnode/core';
import type { BlockRecord, HeaderRecord, TxRecord } from '@chainnode/core';
import { availableChains, chainDir } from '@chainnode/testkit';
import { blockText } from '../src/formatters/block.js';
import { formatAnyTransaction } from '../src/formatters/transaction.js';
import { blockWithTransactionsWriter, transactionText } from '../src/formatters/transaction-text.js';
import { expectedBlockText } from './block-oracle.js';

type Nested = Uint8Array | Nested[];
/** What RLP.encode takes. */
type Item = Uint8Array | bigint | Item[];

/**
 * Two records of one block: with its encodings (transactions decoded only when read, as the
 * store does; `patch` stands for what the store adds from receipts) and with records only.
 */
function blocksOf(
  header: HeaderRecord,
  raws: Uint8Array[],
  senders: Uint8Array[],
  patch: (tx: TxRecord, i: number) => void = () => {},
): { encoded: BlockRecord; decoded: () => BlockRecord } {
  const hashes = raws.map((r) => keccak256(r));
  // A transaction's data read alone (what a trace from recorded rows takes) is the decoder's.
  for (const [i, r] of raws.entries()) {
    let input: Uint8Array | undefined;
    try {
      input = decodeTransaction(r, senders[i] as Uint8Array, hashes[i]).input;
    } catch {
      continue;
    }
    // The matcher only for a difference: one per transaction of the chain cost more than the check.
    const read = Buffer.from(transactionInput(r));
    if (!read.equals(Buffer.from(input))) expect(read.toString('hex')).toBe(Buffer.from(input).toString('hex'));
  }
  const decode = (): TxRecord[] =>
    raws.map((r, i) => {
      const tx = decodeTransaction(r, senders[i] as Uint8Array, hashes[i]);
      patch(tx, i);
      return tx;
    });
  const fields = { header, size: 1000, totalDifficulty: 7n, uncleHashes: [] as Uint8Array[] };
  const encoded = {
    ...fields,
    transactionHashes: hashes,
    transactionEncodings: { raw: raws, senders },
  } as unknown as BlockRecord;
  let txs: TxRecord[] | undefined;
  Object.defineProperty(encoded, 'transactions', { enumerable: true, get: () => (txs ??= decode()) });
  return { encoded, decoded: () => ({ ...fields, transactions: decode() }) };
}

/** Checks a block three ways (see the top); returns its transactions. */
function checkBlock(
  header: HeaderRecord,
  raws: Uint8Array[],
  senders: Uint8Array[],
  patch?: (tx: TxRecord, i: number) => void,
): TxRecord[] {
  const { encoded, decoded } = blocksOf(header, raws, senders, patch);
  const plain = decoded();
  const expected = expectedBlockText(plain);
  // Each matcher only for a difference, as above.
  const fromEncodings = blockText(encoded, true);
  if (fromEncodings !== expected) expect(fromEncodings).toBe(expected);
  const fromRecords = blockText(plain, true);
  if (fromRecords !== expected) expect(fromRecords).toBe(expected);
  plain.transactions.forEach((tx, i) => {
    const loc = {
      tx,
      blockHash: header.hash,
      blockNumber: header.number,
      transactionIndex: i,
      blockTimestamp: header.timestamp,
      baseFeePerGas: header.baseFeePerGas,
    };
    const [text, want] = [transactionText(loc), JSON.stringify(formatAnyTransaction(loc))];
    if (text !== want) expect(text).toBe(want);
  });
  return plain.transactions;
}

/** A stand-in sender (the text does not depend on it being recovered). */
const senderOf = (raw: Uint8Array): Uint8Array => keccak256(raw).subarray(12);

const kindOf = (tx: TxRecord): string =>
  tx.type === 0 ? (tx.chainId === undefined ? 'legacy' : 'legacy-155') : `type-${tx.type}`;

const chains = availableChains();

test.each(chains)('%s: every transaction of the chain, written as text, equals the formatted object', (chain) => {
  const raw = readFileSync(join(chainDir(chain) as string, 'chain.rlp'));
  const kinds = new Map<string, number>();
  let blocks = 0;
  for (let at = 0; at < raw.length; ) {
    const { data, remainder } = RLP.decode(raw.subarray(at), true) as unknown as {
      data: [Nested[], Nested[]];
      remainder: Uint8Array;
    };
    at = raw.length - remainder.length;
    const [headerValues, txValues] = data;
    const header = headerFromValues(headerValues, keccak256(RLP.encode(headerValues)));
    const raws = txValues.map((t) => (t instanceof Uint8Array ? t : RLP.encode(t)));
    for (const tx of checkBlock(header, raws, raws.map(senderOf)))
      kinds.set(kindOf(tx), (kinds.get(kindOf(tx)) ?? 0) + 1);
    blocks++;
  }
  expect(blocks).toBeGreaterThan(50);
  if (chain === 'execution-apis')
    // Its README's census, decoded independently.
    expect(Object.fromEntries(kinds)).toEqual({
      legacy: 73,
      'legacy-155': 123,
      'type-1': 23,
      'type-2': 23,
      'type-3': 6,
      'type-4': 1,
    });
  else expect(kinds.size).toBeGreaterThanOrEqual(3);
});

// Random encodings of every type. One seeded generator, drawn from by the tests below in their
// order, so a failure replays.
let seed = 11;
const rnd = (n: number): number => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
};
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => rnd(256));
const MAX = (1n << 256n) - 1n;
const U64 = (1n << 64n) - 1n;
/** Zero, one, the largest, or a random width (leading zero nibbles included). */
const quantity = (max = MAX): bigint => {
  const k = rnd(6);
  if (k === 0) return 0n;
  if (k === 1) return 1n;
  if (k === 2) return max;
  const width = 1 + rnd(max === MAX ? 32 : 8);
  const v = BigInt(`0x${Buffer.from(bytes(width)).toString('hex')}`) >> BigInt(rnd(8));
  return v > max ? max : v;
};
const data = (): Uint8Array => {
  const k = rnd(4);
  return k === 0
    ? new Uint8Array(0)
    : k === 1
      ? bytes(1 + rnd(60))
      : k === 2
        ? bytes(56 + rnd(400))
        : bytes(3000 + rnd(3000));
};
const to = (): Uint8Array => (rnd(5) === 0 ? new Uint8Array(0) : bytes(20));
const accessList = (): Item[] =>
  Array.from({ length: rnd(3) === 0 ? 0 : 1 + rnd(3) }, () => [
    bytes(20),
    Array.from({ length: rnd(4) }, () => bytes(32)),
  ]);
const typed = (type: number, fields: Item[]): Uint8Array => Uint8Array.from([type, ...RLP.encode(fields)]);
const yParity = (): bigint => (rnd(8) === 0 ? BigInt(2 + rnd(30)) : BigInt(rnd(2)));
/** chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas: the head of types 2, 3 and 4. */
const feeMarketHead = (): Item[] => [quantity(U64), quantity(U64), quantity(), quantity(), quantity(U64)];
/** yParity, r, s: the tail of every typed transaction. */
const signature = (): Item[] => [yParity(), quantity(), quantity()];

/** nonce, gasPrice, gas, to, value, data, v, r, s: a legacy transaction, v drawn in its place. */
const legacy = (v: () => bigint): Uint8Array =>
  RLP.encode([quantity(U64), quantity(), quantity(U64), to(), quantity(), data(), v(), quantity(), quantity()]);

/** One random encoding of each kind the node serves. */
const makers: Record<string, () => Uint8Array> = {
  legacy: () => legacy(() => BigInt(27 + rnd(2))),
  'legacy-155': () => {
    // chainId 0 (v 35/36) has no chainId member; large chain ids need a bigint v.
    const chainId = rnd(4) === 0 ? 0n : quantity(U64);
    return legacy(() => chainId * 2n + 35n + BigInt(rnd(2)));
  },
  'type-1': () =>
    typed(1, [
      quantity(U64),
      quantity(U64),
      quantity(),
      quantity(U64),
      to(),
      quantity(),
      data(),
      accessList(),
      ...signature(),
    ]),
  'type-2': () => typed(2, [...feeMarketHead(), to(), quantity(), data(), accessList(), ...signature()]),
  'type-3': () =>
    typed(3, [
      ...feeMarketHead(),
      bytes(20),
      quantity(),
      data(),
      accessList(),
      quantity(),
      Array.from({ length: rnd(4) }, () => bytes(32)),
      ...signature(),
    ]),
  'type-4': () =>
    typed(4, [
      ...feeMarketHead(),
      bytes(20),
      quantity(),
      data(),
      accessList(),
      Array.from({ length: rnd(4) }, () => [
        quantity(),
        bytes(20),
        quantity(U64),
        rnd(3) === 0 ? 27n : yParity(),
        quantity(),
        quantity(),
      ]),
      ...signature(),
    ]),
  deposit: () =>
    encodeDepositTx({
      sourceHash: bytes(32),
      from: bytes(20),
      to: rnd(5) === 0 ? null : bytes(20),
      mint: rnd(2) === 0 ? 0n : quantity(),
      value: quantity(),
      gas: quantity(U64),
      isSystemTx: rnd(3) === 0,
      data: data(),
    }),
  unknown: () => Uint8Array.from([[5, 0x64, 0x7d, 0x7f][rnd(4)] as number, ...bytes(rnd(100))]),
};

/** A type-2 encoding whose chainId is 0x81 0x05 (a single byte below 0x80 must not be prefixed). */
const nonCanonical = (): Uint8Array => {
  const rest = [2n, 3n, 4n, 5n, new Uint8Array(0), 6n, new Uint8Array(0), [], 1n, 2n, 3n].map((v) =>
    RLP.encode(v as Item),
  );
  const payload = Uint8Array.from([0x81, 0x05, ...rest.flatMap((r) => [...r])]);
  return Uint8Array.from([2, 0xc0 + payload.length, ...payload]);
};

describe('random transactions of every type', () => {
  test.each(Object.keys(makers))('%s: the text equals the formatted object', (kind) => {
    const make = makers[kind] as () => Uint8Array;
    const seen = { zeroTo: 0, long: 0, baseFee: 0, noBaseFee: 0, lists: 0 };
    for (let n = 0; n < 60; n++) {
      const baseFee = rnd(4) === 0 ? undefined : quantity(1n << 64n);
      const header = {
        ...headerFromValues(
          Array.from({ length: 15 }, () => bytes(8)),
          bytes(32),
        ),
        number: quantity(U64),
        timestamp: quantity(U64),
      } as HeaderRecord;
      if (baseFee !== undefined) header.baseFeePerGas = baseFee;
      const raws = Array.from({ length: 1 + rnd(8) }, make);
      // Deposits: the nonce and receipt version the store takes from their receipts.
      const receipts = raws.map(() => ({
        nonce: rnd(3) === 0 ? undefined : quantity(U64),
        version: rnd(2) === 0 ? undefined : 1n,
      }));
      const txs = checkBlock(header, raws, raws.map(senderOf), (tx, i) => {
        if (tx.type !== DEPOSIT_TX_TYPE) return;
        const r = receipts[i] as { nonce: bigint | undefined; version: bigint | undefined };
        if (r.nonce !== undefined) tx.nonce = r.nonce;
        if (r.version !== undefined) tx.depositReceiptVersion = r.version;
      });
      for (const tx of txs) {
        if (kind !== 'unknown' && kind !== 'deposit' && kindOf(tx) !== kind) expect(kindOf(tx)).toBe(kind);
        if (tx.to === null) seen.zeroTo++;
        if (tx.input.length > 56) seen.long++;
        if (
          (tx.accessList?.length ?? 0) + (tx.blobVersionedHashes?.length ?? 0) + (tx.authorizationList?.length ?? 0) >
          0
        )
          seen.lists++;
      }
      seen[baseFee === undefined ? 'noBaseFee' : 'baseFee']++;
    }
    // The draws reach what the writer branches on.
    expect(Math.min(seen.baseFee, seen.noBaseFee)).toBeGreaterThan(0);
    if (kind !== 'unknown') expect(seen.long).toBeGreaterThan(0);
    if (kind !== 'unknown' && kind !== 'type-3' && kind !== 'type-4') expect(seen.zeroTo).toBeGreaterThan(0);
    if (kind.startsWith('type-')) expect(seen.lists).toBeGreaterThan(0);
  });

  test('a block written on demand after another block was written is written again, the same', () => {
    const header = (): HeaderRecord => ({
      ...headerFromValues(
        Array.from({ length: 16 }, () => bytes(8)),
        bytes(32),
      ),
      baseFeePerGas: quantity(U64),
    });
    const kinds = Object.values(makers);
    const blocks = Array.from({ length: 4 }, () => {
      const raws = Array.from({ length: 1 + rnd(20) }, () => (kinds[rnd(kinds.length)] as () => Uint8Array)());
      const { encoded, decoded } = blocksOf(header(), raws, raws.map(senderOf));
      return { encoded, expected: expectedBlockText(decoded()) };
    });
    const writers = blocks.map((b) => blockWithTransactionsWriter(b.encoded));
    // Each written into the middle of a larger buffer, in an order unlike their creation's, twice.
    for (const i of [0, 2, 1, 3, 3, 0]) {
      const w = writers[i] as (typeof writers)[number];
      const out = new Uint8Array(w.length + 10).fill(0x21);
      expect(w.write(out, 5)).toBe(5 + w.length);
      expect(Buffer.from(out).toString('latin1')).toBe(`!!!!!${blocks[i]?.expected}!!!!!`);
    }
  });

  test('an encoding the decoder refuses is not answered from the encodings', () => {
    const header = headerFromValues(
      Array.from({ length: 15 }, () => bytes(8)),
      bytes(32),
    );
    const good = makers['type-2'] as () => Uint8Array;
    const g = good();
    const bad: Uint8Array[] = [
      g.subarray(0, g.length - 1), // truncated
      Uint8Array.from([...g, 0]), // a byte after the payload
      Uint8Array.from([0, ...g.subarray(1)]), // type 0 as an envelope
      typed(2, [1n, 2n, 3n, 4n, 5n, bytes(20), 6n, data(), accessList(), 1n, 2n]), // a field short
      typed(2, [1n, 2n, 3n, 4n, 5n, [bytes(20)], 6n, data(), accessList(), 1n, 2n, 3n]), // a list as `to`
      typed(1, [1n, 2n, 3n, 4n, bytes(20), 6n, data(), [bytes(20)], 1n, 2n, 3n]), // an access-list entry not a list
      RLP.encode([1n, 2n, 3n, bytes(20), 4n, data(), 27n, 1n]), // a legacy field short
      nonCanonical(), // 0x81 before a byte below 0x80
    ];
    for (const raw of bad) {
      expect(() => decodeTransaction(raw, bytes(20))).toThrow();
      const { encoded } = blocksOf(header, [good(), raw], [bytes(20), bytes(20)]);
      expect(() => blockText(encoded, true)).toThrow();
    }
  });
});
