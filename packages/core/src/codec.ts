// Decoders from consensus encodings (header RLP, raw transaction bytes) to the plain records of
// types.ts. They trust their input only as far as RLP shape: a malformed encoding throws a
// RangeError naming what was wrong. Hashes are recomputed here (keccak of the encoding), never
// taken from elsewhere.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from './keccak.js';
import { DEPOSIT_TX_TYPE, decodeDepositTx } from './deposit-tx.js';
import { bytesToBigInt } from './hex.js';
import type { AccessListEntry, AuthorizationRecord, HeaderRecord, TxRecord, WithdrawalRecord } from './types.js';

type Nested = Uint8Array | Nested[];

function asBytes(v: Nested | undefined, what: string): Uint8Array {
  if (!(v instanceof Uint8Array)) throw new RangeError(`${what}: expected a byte string`);
  return v;
}

function asList(v: Nested | undefined, what: string): Nested[] {
  if (v === undefined || v instanceof Uint8Array) throw new RangeError(`${what}: expected a list`);
  return v;
}

function num(v: Nested | undefined, what: string): bigint {
  return bytesToBigInt(asBytes(v, what));
}

/**
 * Header fields from its RLP encoding; `hash` is keccak256 of exactly these bytes (pass it when
 * the caller read the header by that hash: the store's key is its keccak, checked at import).
 */
export function decodeHeader(rlp: Uint8Array, hash: Uint8Array = keccak256(rlp)): HeaderRecord {
  return headerFromValues(asList(RLP.decode(rlp) as Nested, 'header'), hash);
}

/** Header fields from an already-decoded RLP list (e.g. an uncle inside a body). */
export function headerFromValues(f: Nested[], hash: Uint8Array): HeaderRecord {
  if (f.length < 15) throw new RangeError(`header: expected at least 15 fields, got ${f.length}`);
  const h: HeaderRecord = {
    hash,
    parentHash: asBytes(f[0], 'header.parentHash'),
    uncleHash: asBytes(f[1], 'header.uncleHash'),
    coinbase: asBytes(f[2], 'header.coinbase'),
    stateRoot: asBytes(f[3], 'header.stateRoot'),
    transactionsRoot: asBytes(f[4], 'header.transactionsRoot'),
    receiptsRoot: asBytes(f[5], 'header.receiptsRoot'),
    logsBloom: asBytes(f[6], 'header.logsBloom'),
    difficulty: num(f[7], 'header.difficulty'),
    number: num(f[8], 'header.number'),
    gasLimit: num(f[9], 'header.gasLimit'),
    gasUsed: num(f[10], 'header.gasUsed'),
    timestamp: num(f[11], 'header.timestamp'),
    extraData: asBytes(f[12], 'header.extraData'),
    mixHash: asBytes(f[13], 'header.mixHash'),
    nonce: asBytes(f[14], 'header.nonce'),
  };
  if (f.length > 15) h.baseFeePerGas = num(f[15], 'header.baseFeePerGas');
  if (f.length > 16) h.withdrawalsRoot = asBytes(f[16], 'header.withdrawalsRoot');
  if (f.length > 17) h.blobGasUsed = num(f[17], 'header.blobGasUsed');
  if (f.length > 18) h.excessBlobGas = num(f[18], 'header.excessBlobGas');
  if (f.length > 19) h.parentBeaconBlockRoot = asBytes(f[19], 'header.parentBeaconBlockRoot');
  if (f.length > 20) h.requestsHash = asBytes(f[20], 'header.requestsHash');
  return h;
}

function decodeAccessList(v: Nested | undefined): AccessListEntry[] {
  return asList(v, 'tx.accessList').map((e) => {
    const pair = asList(e, 'tx.accessList entry');
    return {
      address: asBytes(pair[0], 'tx.accessList address'),
      storageKeys: asList(pair[1], 'tx.accessList storageKeys').map((k) => asBytes(k, 'tx.accessList key')),
    };
  });
}

function decodeAuthorizations(v: Nested | undefined): AuthorizationRecord[] {
  return asList(v, 'tx.authorizationList').map((e) => {
    const a = asList(e, 'tx.authorization');
    return {
      chainId: num(a[0], 'authorization.chainId'),
      address: asBytes(a[1], 'authorization.address'),
      nonce: num(a[2], 'authorization.nonce'),
      yParity: num(a[3], 'authorization.yParity'),
      r: num(a[4], 'authorization.r'),
      s: num(a[5], 'authorization.s'),
    };
  });
}

function toField(v: Nested | undefined): Uint8Array | null {
  const b = asBytes(v, 'tx.to');
  return b.length === 0 ? null : b;
}

/**
 * A transaction from its canonical encoding (legacy: the RLP list; typed: type byte ++ payload),
 * minus the sender, which the caller supplies (recovered once at import). An OP-stack deposit
 * (0x7e) carries its sender, which is used instead; a type byte not known here (0x05..0x7f but
 * 0x7e) gives an opaque record. `hash`: the transaction's hash when the caller has it stored
 * (else keccak of `raw` here).
 */
export function decodeTransaction(raw: Uint8Array, from: Uint8Array, hash: Uint8Array = keccak256(raw)): TxRecord {
  const first = raw[0];
  if (first === undefined) throw new RangeError('tx: empty encoding');
  if (first >= 0xc0) {
    const f = asList(RLP.decode(raw) as Nested, 'legacy tx');
    if (f.length !== 9) throw new RangeError(`legacy tx: expected 9 fields, got ${f.length}`);
    const v = num(f[6], 'tx.v');
    const tx: TxRecord = {
      type: 0,
      hash,
      from,
      nonce: num(f[0], 'tx.nonce'),
      gasPrice: num(f[1], 'tx.gasPrice'),
      gas: num(f[2], 'tx.gas'),
      to: toField(f[3]),
      value: num(f[4], 'tx.value'),
      input: asBytes(f[5], 'tx.input'),
      v,
      r: num(f[7], 'tx.r'),
      s: num(f[8], 'tx.s'),
    };
    if (v >= 35n) tx.chainId = (v - 35n) / 2n;
    return tx;
  }
  if (first === DEPOSIT_TX_TYPE) {
    const d = decodeDepositTx(raw);
    return {
      type: first,
      hash,
      from: d.from,
      nonce: 0n,
      gas: d.gas,
      to: d.to,
      value: d.value,
      input: d.data,
      v: 0n,
      r: 0n,
      s: 0n,
      gasPrice: 0n,
      sourceHash: d.sourceHash,
      mint: d.mint,
      isSystemTx: d.isSystemTx,
    };
  }
  if (first >= 0x80) throw new RangeError(`tx: 0x${first.toString(16)} is neither a type byte nor an RLP list`);
  if (first > 4) return opaqueTx(first, hash, from);
  const f = asList(RLP.decode(raw.subarray(1)) as Nested, `type ${first} tx`);
  // Each record written out field by field, in one order: object spreads (a shared head, the
  // signature) built them through V8's slow path, most of a decode's time (~25 µs of ~30).
  const chainId = num(f[0], 'tx.chainId');
  const nonce = num(f[1], 'tx.nonce');
  switch (first) {
    case 1:
      if (f.length !== 11) throw new RangeError(`type 1 tx: expected 11 fields, got ${f.length}`);
      return {
        type: first,
        hash,
        from,
        chainId,
        nonce,
        gasPrice: num(f[2], 'tx.gasPrice'),
        gas: num(f[3], 'tx.gas'),
        to: toField(f[4]),
        value: num(f[5], 'tx.value'),
        input: asBytes(f[6], 'tx.input'),
        accessList: decodeAccessList(f[7]),
        v: num(f[8], 'tx.yParity'),
        r: num(f[9], 'tx.r'),
        s: num(f[10], 'tx.s'),
      };
    case 2:
    case 3:
    case 4: {
      const expected = first === 2 ? 12 : first === 3 ? 14 : 13;
      if (f.length !== expected) throw new RangeError(`type ${first} tx: expected ${expected} fields, got ${f.length}`);
      const tx: TxRecord = {
        type: first,
        hash,
        from,
        chainId,
        nonce,
        maxPriorityFeePerGas: num(f[2], 'tx.maxPriorityFeePerGas'),
        maxFeePerGas: num(f[3], 'tx.maxFeePerGas'),
        gas: num(f[4], 'tx.gas'),
        to: toField(f[5]),
        value: num(f[6], 'tx.value'),
        input: asBytes(f[7], 'tx.input'),
        accessList: decodeAccessList(f[8]),
        v: num(f[expected - 3], 'tx.yParity'),
        r: num(f[expected - 2], 'tx.r'),
        s: num(f[expected - 1], 'tx.s'),
      };
      if (first === 3) {
        tx.maxFeePerBlobGas = num(f[9], 'tx.maxFeePerBlobGas');
        tx.blobVersionedHashes = asList(f[10], 'tx.blobVersionedHashes').map((h) => asBytes(h, 'tx.blobVersionedHash'));
      }
      if (first === 4) tx.authorizationList = decodeAuthorizations(f[9]);
      return tx;
    }
    default:
      throw new RangeError(`tx: unknown transaction type ${first}`);
  }
}

/** Where a transaction's data sits in its RLP list, by type (decodeTransaction's fields). */
const INPUT_FIELD: Record<number, number> = { 0: 5, 1: 6, 2: 7, 3: 7, 4: 7 };

/**
 * A transaction's data (input) from its canonical encoding, as decodeTransaction reads it, without
 * decoding its other fields: what a trace of a recorded block needs of each transaction.
 */
export function transactionInput(raw: Uint8Array): Uint8Array {
  const first = raw[0];
  if (first === undefined) throw new RangeError('tx: empty encoding');
  if (first === DEPOSIT_TX_TYPE) return decodeDepositTx(raw).data;
  if (first >= 0x80 && first < 0xc0)
    throw new RangeError(`tx: 0x${first.toString(16)} is neither a type byte nor an RLP list`);
  if (first < 0xc0 && first > 4) return new Uint8Array(0);
  const type = first >= 0xc0 ? 0 : first;
  const f = asList(RLP.decode(type === 0 ? raw : raw.subarray(1)) as Nested, `type ${type} tx`);
  return asBytes(f[INPUT_FIELD[type] as number], 'tx.input');
}

/**
 * An EIP-2718 envelope of a type not known here (a chain's own system transactions, a later
 * fork's): its payload is not read; it shows with its type, hash and sender only.
 */
function opaqueTx(type: number, hash: Uint8Array, from: Uint8Array): TxRecord {
  return {
    type,
    hash,
    from,
    nonce: 0n,
    gas: 0n,
    to: null,
    value: 0n,
    input: new Uint8Array(0),
    v: 0n,
    r: 0n,
    s: 0n,
    opaque: true,
  };
}

/** Withdrawals from their RLP list values ([index, validatorIndex, address, amount] each). */
export function withdrawalsFromValues(list: Nested[]): WithdrawalRecord[] {
  return list.map((w) => {
    const f = asList(w, 'withdrawal');
    return {
      index: num(f[0], 'withdrawal.index'),
      validatorIndex: num(f[1], 'withdrawal.validatorIndex'),
      address: asBytes(f[2], 'withdrawal.address'),
      amount: num(f[3], 'withdrawal.amount'),
    };
  });
}
