// The OP-stack deposit codec against a deposit of OP Mainnet (bytes and hash as published), its
// round trip, and hostile encodings; transactions of unknown types; the chain family of a genesis.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { chainFamilyOf } from '../src/chain-family.js';
import { decodeTransaction } from '../src/codec.js';
import {
  DEPOSIT_TX_TYPE,
  decodeDepositTx,
  depositTxFromJson,
  depositTxHash,
  encodeDepositTx,
} from '../src/deposit-tx.js';
import type { DepositTx } from '../src/deposit-tx.js';
import { fromHex, toData } from '../src/hex.js';

// OP Mainnet block 124665056, transaction 0 (the L1 attributes deposit), as published:
// https://optimistic.etherscan.io/tx/0x312e290cf36df704a2217b015d6455396830b0ce678b860ebfcc30f41403d7b1
const OP_MAINNET_RAW = fromHex(
  '7ef8f8a0683079df94aa5b9cf86687d739a60a9b4f0835e520ec4d664e2e415dca17a6df94deaddeaddeaddeaddeaddeaddeaddeaddead0001' +
    '944200000000000000000000000000000000000015808083' +
    '0f424080b8a4440a5e200000146b000f79c500000000000000040000000066d052e700000000013ad8a3' +
    '000000000000000000000000000000000000000000000000000000003ef12787' +
    '00000000000000000000000000000000000000000000000000000000000000012fdf87b89884a61e74b322bbcf60386f54' +
    '3bfae7827725efaaf0ab1de2294a590000000000000000000000006887246668a3b87f54deb3b94ba47a6f63f32985',
);
const OP_MAINNET_HASH = '0x312e290cf36df704a2217b015d6455396830b0ce678b860ebfcc30f41403d7b1';

const bytes = (byte: number, n: number): Uint8Array => new Uint8Array(n).fill(byte);

/** 0x7e ++ rlp(items): an encoding built item by item, for the hostile cases. */
const envelope = (items: unknown[]): Uint8Array => {
  const payload = RLP.encode(items as Uint8Array[]);
  const out = new Uint8Array(payload.length + 1);
  out[0] = 0x7e;
  out.set(payload, 1);
  return out;
};
const valid = (): Uint8Array[] => [
  bytes(0x11, 32),
  bytes(0x22, 20),
  bytes(0x33, 20),
  Uint8Array.of(5),
  Uint8Array.of(6),
  Uint8Array.of(0x52, 0x08),
  new Uint8Array(0),
  Uint8Array.of(0xab),
];

describe('deposit transaction codec', () => {
  test('an OP Mainnet deposit decodes, re-encodes to the same bytes, and hashes to its published hash', () => {
    const tx = decodeDepositTx(OP_MAINNET_RAW);
    expect(toData(tx.sourceHash)).toBe('0x683079df94aa5b9cf86687d739a60a9b4f0835e520ec4d664e2e415dca17a6df');
    expect(toData(tx.from)).toBe('0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001');
    expect(tx.to && toData(tx.to)).toBe('0x4200000000000000000000000000000000000015');
    expect(tx.mint).toBe(0n);
    expect(tx.value).toBe(0n);
    expect(tx.gas).toBe(1_000_000n);
    expect(tx.isSystemTx).toBe(false);
    expect(tx.data.length).toBe(164);
    expect(toData(tx.data.subarray(0, 4))).toBe('0x440a5e20'); // setL1BlockValuesEcotone()
    expect(toData(encodeDepositTx(tx))).toBe(toData(OP_MAINNET_RAW));
    expect(toData(depositTxHash(tx))).toBe(OP_MAINNET_HASH);
    expect(toData(keccak256(OP_MAINNET_RAW))).toBe(OP_MAINNET_HASH);
  });

  test('round trip: a creation with mint, value and the system flag', () => {
    const tx: DepositTx = {
      sourceHash: bytes(0x01, 32),
      from: bytes(0x02, 20),
      to: null,
      mint: 10n ** 18n,
      value: 2n ** 255n,
      gas: 2n ** 64n - 1n,
      isSystemTx: true,
      data: bytes(0x60, 100),
    };
    const raw = encodeDepositTx(tx);
    expect(raw[0]).toBe(DEPOSIT_TX_TYPE);
    // The items as op-geth's rlp writes them: to empty, isSystemTx 0x01.
    const items = RLP.decode(raw.subarray(1)) as Uint8Array[];
    expect(items.map((i) => toData(i))).toEqual([
      toData(tx.sourceHash),
      toData(tx.from),
      '0x',
      '0x0de0b6b3a7640000',
      `0x80${'00'.repeat(31)}`,
      '0xffffffffffffffff',
      '0x01',
      toData(tx.data),
    ]);
    expect(decodeDepositTx(raw)).toEqual(tx);
    // A zero mint and a false flag are empty strings.
    const plain = encodeDepositTx({ ...tx, mint: 0n, isSystemTx: false });
    const f = RLP.decode(plain.subarray(1)) as Uint8Array[];
    expect([f[3]?.length, f[6]?.length]).toEqual([0, 0]);
  });

  test('the encoder refuses fields out of shape', () => {
    const tx = decodeDepositTx(OP_MAINNET_RAW);
    expect(() => encodeDepositTx({ ...tx, sourceHash: bytes(1, 31) })).toThrow('sourceHash must be 32 bytes');
    expect(() => encodeDepositTx({ ...tx, from: bytes(1, 21) })).toThrow('from must be 20 bytes');
    expect(() => encodeDepositTx({ ...tx, to: bytes(1, 0) })).toThrow('to must be 20 bytes');
    expect(() => encodeDepositTx({ ...tx, mint: -1n })).toThrow('mint out of range');
    expect(() => encodeDepositTx({ ...tx, value: 2n ** 256n })).toThrow('value out of range');
    expect(() => encodeDepositTx({ ...tx, gas: 2n ** 64n })).toThrow('gas out of range');
  });

  test('hostile encodings fail with the field named', () => {
    const cases: [Uint8Array, string][] = [
      [new Uint8Array(0), 'empty encoding'],
      [Uint8Array.of(0x7e), 'no payload'],
      [Uint8Array.of(0x7e, 0xf8, 0x02, 0x80), 'malformed RLP'],
      [Uint8Array.of(0x02, 0xc0), 'expected 0x7e'],
      [Uint8Array.of(0x7e, 0x80), 'not an RLP list'],
      [Uint8Array.of(...envelope(valid()), 0x00), 'malformed RLP'],
      [envelope(valid().slice(0, 7)), 'expected 8 fields, got 7'],
      [envelope([...valid(), new Uint8Array(0)]), 'expected 8 fields, got 9'],
      [envelope(valid().map((v, i) => (i === 0 ? bytes(1, 31) : v))), 'sourceHash must be 32 bytes'],
      [envelope(valid().map((v, i) => (i === 1 ? bytes(1, 19) : v))), 'from must be 20 bytes'],
      [envelope(valid().map((v, i) => (i === 2 ? bytes(1, 21) : v))), 'to must be 20 bytes or empty'],
      [envelope(valid().map((v, i) => (i === 3 ? Uint8Array.of(0, 5) : v))), 'mint has a leading zero byte'],
      [envelope(valid().map((v, i) => (i === 4 ? bytes(1, 33) : v))), 'value longer than 32 bytes'],
      [envelope(valid().map((v, i) => (i === 5 ? bytes(1, 9) : v))), 'gas longer than 8 bytes'],
      [envelope(valid().map((v, i) => (i === 6 ? Uint8Array.of(2) : v))), 'isSystemTx must be empty or 0x01'],
      [envelope(valid().map((v, i) => (i === 6 ? Uint8Array.of(0) : v))), 'isSystemTx must be empty or 0x01'],
      [envelope(valid().map((v, i) => (i === 7 ? [v] : v))), 'data must be a byte string'],
      [envelope(valid().map((v, i) => (i === 1 ? [] : v))), 'from must be a byte string'],
    ];
    for (const [raw, message] of cases) {
      expect(() => decodeDepositTx(raw)).toThrow(RangeError);
      expect(() => decodeDepositTx(raw)).toThrow(message);
    }
    // A well-formed one of the same items decodes (the cases above differ from it in one place).
    expect(decodeDepositTx(envelope(valid())).gas).toBe(0x5208n);
  });

  test('from JSON as op-geth serves it (zero mint and false flag left out), checked against its hash', () => {
    const json = {
      type: '0x7e',
      hash: OP_MAINNET_HASH,
      sourceHash: '0x683079df94aa5b9cf86687d739a60a9b4f0835e520ec4d664e2e415dca17a6df',
      from: '0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001',
      to: '0x4200000000000000000000000000000000000015',
      value: '0x0',
      gas: '0xf4240',
      input: toData(decodeDepositTx(OP_MAINNET_RAW).data),
      nonce: '0x7a1c1ed',
    };
    expect(toData(depositTxHash(depositTxFromJson(json)))).toBe(OP_MAINNET_HASH);
    expect(() => depositTxFromJson({ ...json, type: '0x2' })).toThrow('type is not 0x7e');
    expect(() => depositTxFromJson({ ...json, gas: '0x10000000000000000' })).toThrow('gas out of range');
    expect(() => depositTxFromJson({ ...json, gas: '0x01' })).toThrow('gas is not a quantity');
    expect(() => depositTxFromJson({ ...json, mint: 5 })).toThrow('mint is not a quantity');
    expect(() => depositTxFromJson({ ...json, isSystemTx: 'true' })).toThrow('isSystemTx is not a boolean');
    expect(() => depositTxFromJson({ ...json, isSystemTx: '0x2' })).toThrow('isSystemTx is not a boolean');
    expect(depositTxFromJson({ ...json, isSystemTx: '0x1' }).isSystemTx).toBe(true);
    expect(depositTxFromJson({ ...json, isSystemTx: true }).isSystemTx).toBe(true);
    expect(() => depositTxFromJson({ ...json, sourceHash: '0x12' })).toThrow('sourceHash must be 32 bytes');
    expect(() => depositTxFromJson({ ...json, input: '0xzz' })).toThrow('input is not data');
    expect(() => depositTxFromJson(null)).toThrow('not an object');
  });
});

describe('decodeTransaction of deposits and unknown types', () => {
  test('a deposit: its own sender, no signature, gas price 0, the deposit fields', () => {
    const hash = keccak256(OP_MAINNET_RAW);
    const tx = decodeTransaction(OP_MAINNET_RAW, bytes(0xee, 20));
    expect(tx.type).toBe(0x7e);
    expect(toData(tx.hash)).toBe(toData(hash));
    expect(toData(tx.from)).toBe('0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001');
    expect([tx.nonce, tx.v, tx.r, tx.s, tx.gasPrice, tx.mint, tx.isSystemTx]).toEqual([0n, 0n, 0n, 0n, 0n, 0n, false]);
    expect(tx.sourceHash && toData(tx.sourceHash)).toBe(
      '0x683079df94aa5b9cf86687d739a60a9b4f0835e520ec4d664e2e415dca17a6df',
    );
    expect(tx.opaque).toBeUndefined();
  });

  test('an envelope of an unknown type is opaque: type, hash and sender only; not a type byte throws', () => {
    for (const type of [0x05, 0x64, 0x7f]) {
      const raw = Uint8Array.of(type, 0xde, 0xad); // the payload is never read
      const tx = decodeTransaction(raw, bytes(0x22, 20));
      expect(tx).toMatchObject({ type, opaque: true, to: null, nonce: 0n });
      expect(toData(tx.hash)).toBe(toData(keccak256(raw)));
      expect(toData(tx.from)).toBe(toData(bytes(0x22, 20)));
    }
    expect(() => decodeTransaction(Uint8Array.of(0x80, 1), bytes(0x22, 20))).toThrow('neither a type byte');
    expect(() => decodeTransaction(Uint8Array.of(0x7e, 0xc0), bytes(0x22, 20))).toThrow('expected 8 fields');
  });
});

describe('chainFamilyOf', () => {
  test('optimism when config.optimism is an object, else ethereum', () => {
    const op = {
      config: {
        chainId: 10,
        bedrockBlock: 0,
        regolithTime: 0,
        canyonTime: 0,
        optimism: { eip1559Elasticity: 6, eip1559Denominator: 50, eip1559DenominatorCanyon: 250 },
      },
    };
    expect(chainFamilyOf(op)).toBe('optimism');
    expect(chainFamilyOf({ config: { chainId: 1 } })).toBe('ethereum');
    expect(chainFamilyOf({ config: { optimism: null } })).toBe('ethereum');
    expect(chainFamilyOf({ config: { optimism: [] } })).toBe('ethereum');
    expect(chainFamilyOf({ config: { optimism: true } })).toBe('ethereum');
    expect(chainFamilyOf(null)).toBe('ethereum');
    expect(chainFamilyOf('{"config":{"optimism":{}}}')).toBe('ethereum');
  });
});
