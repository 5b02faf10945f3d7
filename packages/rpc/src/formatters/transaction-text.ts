// A transaction's JSON written directly as text: exactly JSON.stringify(formatAnyTransaction(loc))
// (same keys, order, presence rules; transaction.ts says why each field is as it is), without the
// object, its strings and the stringify pass. Every value is a hex string, null or true, so
// nothing needs escaping. A full-transaction block answer writes ~240 of these per mainnet block:
// the object path (one object of ~20 strings per transaction, then JSON.stringify of the array)
// spent most of its time making and collecting garbage. transaction-text.test.ts compares both on
// chains and on random transactions of every type.
//
// A block from the store also carries its transactions' encodings (BlockRecord
// transactionEncodings): their text is written straight from the RLP, with no decoded record at
// all, which was the other half of the cost (a record of ~20 fields, a subarray per RLP item, a
// bigint per quantity). Whatever that writer does not take (a deposit, whose nonce and receipt
// version are in its receipt; an encoding not of the expected shape) is written from the decoded
// record, which also throws decodeTransaction's error for a bad one. The block's text is written
// as ASCII bytes into one reused buffer (the answer is sent as bytes): a string built of
// thousands of pieces cost more to flatten and encode than to write.
import { DEPOSIT_TX_TYPE, blockJsonHead, hexOfBytes } from '@chainnode/core';
import type { AuthorizationRecord, BlockRecord, TxRecord, TxWithLocation } from '@chainnode/core';
import type { AsciiWriter } from '../json-text.js';
import { effectiveGasPrice } from './transaction.js';

const ZERO_HASH = new Uint8Array(32);

/** `"blockHash":…,"blockNumber":…,"blockTimestamp":…`: the same for every transaction of a block. */
function locationText(blockHash: Uint8Array, blockNumber: bigint, blockTimestamp: bigint): string {
  return `"blockHash":"0x${hexOfBytes(blockHash)}","blockNumber":"0x${blockNumber.toString(16)}","blockTimestamp":"0x${blockTimestamp.toString(16)}"`;
}

function authorizationText(a: AuthorizationRecord): string {
  return (
    `{"chainId":"0x${a.chainId.toString(16)}","address":"0x${hexOfBytes(a.address)}","nonce":"0x${a.nonce.toString(16)}",` +
    `"yParity":"0x${a.yParity.toString(16)}","r":"0x${a.r.toString(16)}","s":"0x${a.s.toString(16)}"}`
  );
}

/**
 * The JSON object of `tx`, the `index`th transaction of a block whose location fields are
 * `location` (locationText) and whose base fee is `baseFee`.
 */
function writeTransaction(tx: TxRecord, location: string, index: number, baseFee: bigint | undefined): string {
  const type = tx.type;
  let s = `{${location},"from":"0x${hexOfBytes(tx.from)}",`;
  if (tx.opaque === true)
    return `${s}"hash":"0x${hexOfBytes(tx.hash)}","transactionIndex":"0x${index.toString(16)}","type":"0x${type.toString(16)}"}`;
  const to = tx.to === null ? 'null' : `"0x${hexOfBytes(tx.to)}"`;
  if (type === DEPOSIT_TX_TYPE) {
    s +=
      `"gas":"0x${tx.gas.toString(16)}","gasPrice":"0x0","hash":"0x${hexOfBytes(tx.hash)}","input":"0x${hexOfBytes(tx.input)}",` +
      `"nonce":"0x${tx.nonce.toString(16)}","to":${to},"transactionIndex":"0x${index.toString(16)}",` +
      `"value":"0x${tx.value.toString(16)}","type":"0x7e","v":"0x0","r":"0x0","s":"0x0",` +
      `"sourceHash":"0x${hexOfBytes(tx.sourceHash ?? ZERO_HASH)}"`;
    if (tx.mint !== undefined && tx.mint !== 0n) s += `,"mint":"0x${tx.mint.toString(16)}"`;
    if (tx.isSystemTx === true) s += ',"isSystemTx":true';
    if (tx.depositReceiptVersion !== undefined)
      s += `,"depositReceiptVersion":"0x${tx.depositReceiptVersion.toString(16)}"`;
    return `${s}}`;
  }
  const typed = type !== 0;
  const dynamicFee = type >= 2;
  const gasPrice = dynamicFee ? effectiveGasPrice(tx, baseFee) : (tx.gasPrice ?? 0n);
  s += `"gas":"0x${tx.gas.toString(16)}","gasPrice":"0x${gasPrice.toString(16)}",`;
  if (dynamicFee)
    s += `"maxFeePerGas":"0x${(tx.maxFeePerGas ?? 0n).toString(16)}","maxPriorityFeePerGas":"0x${(tx.maxPriorityFeePerGas ?? 0n).toString(16)}",`;
  if (type === 3) s += `"maxFeePerBlobGas":"0x${(tx.maxFeePerBlobGas ?? 0n).toString(16)}",`;
  s +=
    `"hash":"0x${hexOfBytes(tx.hash)}","input":"0x${hexOfBytes(tx.input)}","nonce":"0x${tx.nonce.toString(16)}",` +
    `"to":${to},"transactionIndex":"0x${index.toString(16)}","value":"0x${tx.value.toString(16)}","type":"0x${type.toString(16)}",`;
  if (typed) {
    s += '"accessList":[';
    const list = tx.accessList ?? [];
    for (let i = 0; i < list.length; i++) {
      const e = list[i] as { address: Uint8Array; storageKeys: Uint8Array[] };
      s += `${i === 0 ? '' : ','}{"address":"0x${hexOfBytes(e.address)}","storageKeys":[`;
      for (let k = 0; k < e.storageKeys.length; k++)
        s += `${k === 0 ? '' : ','}"0x${hexOfBytes(e.storageKeys[k] as Uint8Array)}"`;
      s += ']}';
    }
    s += '],';
  }
  if (typed || (tx.chainId !== undefined && tx.chainId !== 0n))
    s += `"chainId":"0x${(tx.chainId ?? 0n).toString(16)}",`;
  const blobs = tx.blobVersionedHashes;
  if (blobs !== undefined && blobs.length > 0) {
    s += '"blobVersionedHashes":[';
    for (let i = 0; i < blobs.length; i++) s += `${i === 0 ? '' : ','}"0x${hexOfBytes(blobs[i] as Uint8Array)}"`;
    s += '],';
  }
  const auths = tx.authorizationList;
  if (auths !== undefined && auths.length > 0) {
    s += '"authorizationList":[';
    for (let i = 0; i < auths.length; i++)
      s += `${i === 0 ? '' : ','}${authorizationText(auths[i] as AuthorizationRecord)}`;
    s += '],';
  }
  s += `"v":"0x${tx.v.toString(16)}","r":"0x${tx.r.toString(16)}","s":"0x${tx.s.toString(16)}"`;
  if (typed) s += tx.v === 0n ? ',"yParity":"0x0"' : ',"yParity":"0x1"';
  return `${s}}`;
}

/** JSON.stringify(formatAnyTransaction(loc)), written directly. */
export function transactionText(loc: TxWithLocation): string {
  return writeTransaction(
    loc.tx,
    locationText(loc.blockHash, loc.blockNumber, loc.blockTimestamp),
    loc.transactionIndex,
    loc.baseFeePerGas,
  );
}

// ---- Straight from the encoding, as ASCII bytes ----

const HEX_DIGITS = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/** A growing ASCII buffer, reused from call to call (writing is synchronous). */
let buf = new Uint8Array(1 << 20);
let pos = 0;

function room(n: number): void {
  if (pos + n <= buf.length) return;
  const bigger = new Uint8Array(Math.max(buf.length * 2, pos + n));
  bigger.set(buf.subarray(0, pos));
  buf = bigger;
}

/** Writes an ASCII string. */
function str(s: string): void {
  const n = s.length;
  room(n);
  const b = buf;
  let p = pos;
  for (let i = 0; i < n; i++) b[p++] = s.charCodeAt(i);
  pos = p;
}

/** Writes the hex of src[start, end). */
function hex(src: Uint8Array, start: number, end: number): void {
  room(2 * (end - start));
  const b = buf;
  let p = pos;
  for (let i = start; i < end; i++) {
    const x = src[i] as number;
    b[p++] = HEX_DIGITS[x >> 4] as number;
    b[p++] = HEX_DIGITS[x & 15] as number;
  }
  pos = p;
}

/** Writes the big-endian integer src[start, end) as minimal hex digits ("0" for zero), as bigint.toString(16). */
function quantity(src: Uint8Array, start: number, end: number): void {
  let s = start;
  while (s < end && src[s] === 0) s++;
  room(2 * (end - s) + 1);
  if (s === end) {
    buf[pos++] = 48;
    return;
  }
  const x = src[s] as number;
  if (x >= 16) buf[pos++] = HEX_DIGITS[x >> 4] as number;
  buf[pos++] = HEX_DIGITS[x & 15] as number;
  hex(src, s + 1, end);
}

// The RLP item last read by rlpItem: its payload is [itemStart, itemEnd), a list or a string.
// Module state rather than a returned object: nothing is allocated per item.
let itemStart = 0;
let itemEnd = 0;
let itemList = false;

/**
 * Reads the RLP item at `at` of `b`, which must end by `limit`, into itemStart/itemEnd/itemList;
 * returns the offset after it, or -1 when it is not canonical RLP (as @ethereumjs/rlp refuses:
 * a single byte below 0x80 with a prefix, a long length with leading zeros or below 56).
 */
function rlpItem(b: Uint8Array, at: number, limit: number): number {
  if (at >= limit) return -1;
  const p = b[at] as number;
  if (p < 0x80) {
    itemStart = at;
    itemEnd = at + 1;
    itemList = false;
    return itemEnd;
  }
  let start: number;
  let length: number;
  if (p <= 0xb7 || (p >= 0xc0 && p <= 0xf7)) {
    length = p <= 0xb7 ? p - 0x80 : p - 0xc0;
    start = at + 1;
    if (p === 0x81 && start < limit && (b[start] as number) < 0x80) return -1;
  } else {
    const ll = p <= 0xbf ? p - 0xb7 : p - 0xf7;
    if (ll > 4 || at + 1 + ll > limit || b[at + 1] === 0) return -1;
    length = 0;
    for (let i = 1; i <= ll; i++) length = length * 256 + (b[at + i] as number);
    if (length < 56) return -1;
    start = at + 1 + ll;
  }
  if (start + length > limit) return -1;
  itemStart = start;
  itemEnd = start + length;
  itemList = p >= 0xc0;
  return itemEnd;
}

// The top-level fields of the transaction being written: field i's payload is [F[2i], F[2i+1]).
const F = new Int32Array(2 * 16);

/**
 * Reads the fields of the list [start, end) into F; true when there are exactly `count`, each a
 * list where `listMask` has its bit and a string elsewhere.
 */
function readFields(b: Uint8Array, start: number, end: number, count: number, listMask: number): boolean {
  let at = start;
  let n = 0;
  while (at < end) {
    if (n === count) return false;
    at = rlpItem(b, at, end);
    if (at < 0 || itemList !== ((listMask >> n) & 1) > 0) return false;
    F[2 * n] = itemStart;
    F[2 * n + 1] = itemEnd;
    n++;
  }
  return n === count;
}

const fieldQuantity = (b: Uint8Array, i: number): void => quantity(b, F[2 * i] as number, F[2 * i + 1] as number);
const fieldIsZero = (b: Uint8Array, i: number): boolean => {
  for (let k = F[2 * i] as number; k < (F[2 * i + 1] as number); k++) if (b[k] !== 0) return false;
  return true;
};

/** Field i as a bigint (the fee fields, a legacy v). */
function fieldUint(b: Uint8Array, i: number): bigint {
  const start = F[2 * i] as number;
  const end = F[2 * i + 1] as number;
  if (end - start <= 6) {
    let v = 0;
    for (let k = start; k < end; k++) v = v * 256 + (b[k] as number);
    return BigInt(v);
  }
  let v = 0n;
  for (let k = start; k < end; k++) v = (v << 8n) | BigInt(b[k] as number);
  return v;
}

/** Writes the access list [start, end) (entries [address, [keys]]); false when out of shape. */
function accessList(b: Uint8Array, start: number, end: number): boolean {
  str('[');
  for (let at = start; at < end; ) {
    const next = rlpItem(b, at, end);
    if (next < 0 || !itemList) return false;
    const entryEnd = itemEnd;
    let e = rlpItem(b, itemStart, entryEnd);
    if (e < 0 || itemList) return false;
    str(at === start ? '{"address":"0x' : ',{"address":"0x');
    hex(b, itemStart, itemEnd);
    str('","storageKeys":[');
    e = rlpItem(b, e, entryEnd);
    if (e < 0 || !itemList || e !== entryEnd) return false;
    const keysEnd = itemEnd;
    for (let k = itemStart, first = true; k < keysEnd; first = false) {
      k = rlpItem(b, k, keysEnd);
      if (k < 0 || itemList) return false;
      str(first ? '"0x' : ',"0x');
      hex(b, itemStart, itemEnd);
      str('"');
    }
    str(']}');
    at = next;
  }
  str(']');
  return true;
}

/** Writes the blob hashes [start, end) as `"blobVersionedHashes":[…],` (nothing when empty); false when out of shape. */
function blobHashes(b: Uint8Array, start: number, end: number): boolean {
  if (start === end) return true;
  str('"blobVersionedHashes":[');
  for (let at = start; at < end; ) {
    const next = rlpItem(b, at, end);
    if (next < 0 || itemList) return false;
    str(at === start ? '"0x' : ',"0x');
    hex(b, itemStart, itemEnd);
    str('"');
    at = next;
  }
  str('],');
  return true;
}

const AUTH = new Int32Array(12);

/** Writes the authorizations [start, end) as `"authorizationList":[…],` (nothing when empty); false when out of shape. */
function authorizations(b: Uint8Array, start: number, end: number): boolean {
  if (start === end) return true;
  str('"authorizationList":[');
  for (let at = start; at < end; ) {
    const next = rlpItem(b, at, end);
    if (next < 0 || !itemList) return false;
    const entryEnd = itemEnd;
    let n = 0;
    for (let k = itemStart; k < entryEnd; n++) {
      k = rlpItem(b, k, entryEnd);
      if (k < 0 || itemList || n === 6) return false;
      AUTH[2 * n] = itemStart;
      AUTH[2 * n + 1] = itemEnd;
    }
    if (n !== 6) return false;
    const q = (i: number): void => quantity(b, AUTH[2 * i] as number, AUTH[2 * i + 1] as number);
    str(at === start ? '{"chainId":"0x' : ',{"chainId":"0x');
    q(0);
    str('","address":"0x');
    hex(b, AUTH[2] as number, AUTH[3] as number);
    str('","nonce":"0x');
    q(2);
    str('","yParity":"0x');
    q(3);
    str('","r":"0x');
    q(4);
    str('","s":"0x');
    q(5);
    str('"}');
    at = next;
  }
  str('],');
  return true;
}

/**
 * Writes JSON.stringify(formatAnyTransaction(...)) of the transaction encoded as `raw` (sender
 * `from`, hash `hash`), the `index`th of a block with location text `location` and base fee
 * `baseFee`. False, with nothing written, for a deposit or an encoding this does not take (the
 * caller writes the decoded record).
 */
function writeEncoded(
  raw: Uint8Array,
  from: Uint8Array,
  hash: Uint8Array,
  location: string,
  index: number,
  baseFee: bigint | undefined,
): boolean {
  const first = raw[0];
  if (first === undefined || first === 0 || first === DEPOSIT_TX_TYPE || (first >= 0x80 && first < 0xc0)) return false;
  const begin = pos;
  str('{');
  str(location);
  str(',"from":"0x');
  hex(from, 0, from.length);
  if (first > 4 && first < 0x80) {
    str('","hash":"0x');
    hex(hash, 0, hash.length);
    str(`","transactionIndex":"0x${index.toString(16)}","type":"0x${first.toString(16)}"}`);
    return true;
  }
  const legacy = first >= 0xc0;
  const type = legacy ? 0 : first;
  // The payload list: the whole encoding (legacy) or what follows the type byte, and nothing after it.
  if (rlpItem(raw, legacy ? 0 : 1, raw.length) !== raw.length || !itemList) return abort(begin);
  // Field indexes: nonce, then the fee field(s), gas, to, value, input, access list, ..., v, r, s.
  const nonceAt = legacy ? 0 : 1;
  const feeAt = nonceAt + 1; // gasPrice, or the tip then the fee cap
  const gasAt = type >= 2 ? feeAt + 2 : feeAt + 1;
  const count = legacy ? 9 : type === 1 ? 11 : type === 2 ? 12 : type === 3 ? 14 : 13;
  const listMask = legacy
    ? 0
    : (1 << (gasAt + 4)) | (type === 3 ? 1 << (gasAt + 6) : 0) | (type === 4 ? 1 << (gasAt + 5) : 0);
  if (!readFields(raw, itemStart, itemEnd, count, listMask)) return abort(begin);
  const vAt = count - 3;
  str('","gas":"0x');
  fieldQuantity(raw, gasAt);
  str('","gasPrice":"0x');
  if (type >= 2) {
    const tip = fieldUint(raw, feeAt);
    const feeCap = fieldUint(raw, feeAt + 1);
    // geth's effectiveGasPrice (transaction.ts): min(tip + baseFee, feeCap); the fee cap without a base fee.
    let price = feeCap;
    if (baseFee !== undefined && tip + baseFee < feeCap) price = tip + baseFee;
    str(price.toString(16));
    str('","maxFeePerGas":"0x');
    fieldQuantity(raw, feeAt + 1);
    str('","maxPriorityFeePerGas":"0x');
    fieldQuantity(raw, feeAt);
    if (type === 3) {
      str('","maxFeePerBlobGas":"0x');
      fieldQuantity(raw, gasAt + 5);
    }
  } else fieldQuantity(raw, feeAt);
  str('","hash":"0x');
  hex(hash, 0, hash.length);
  str('","input":"0x');
  hex(raw, F[2 * (gasAt + 3)] as number, F[2 * (gasAt + 3) + 1] as number);
  str('","nonce":"0x');
  fieldQuantity(raw, nonceAt);
  const toStart = F[2 * (gasAt + 1)] as number;
  const toEnd = F[2 * (gasAt + 1) + 1] as number;
  if (toStart === toEnd) str('","to":null,"transactionIndex":"0x');
  else {
    str('","to":"0x');
    hex(raw, toStart, toEnd);
    str('","transactionIndex":"0x');
  }
  str(index.toString(16));
  str('","value":"0x');
  fieldQuantity(raw, gasAt + 2);
  str(legacy ? '","type":"0x0",' : `","type":"0x${type.toString(16)}","accessList":`);
  if (legacy) {
    // EIP-155: chainId = (v - 35) / 2, shown when not zero.
    const v = fieldUint(raw, vAt);
    if (v >= 37n) str(`"chainId":"0x${((v - 35n) / 2n).toString(16)}",`);
  } else {
    if (!accessList(raw, F[2 * (gasAt + 4)] as number, F[2 * (gasAt + 4) + 1] as number)) return abort(begin);
    str(',"chainId":"0x');
    fieldQuantity(raw, 0);
    str('",');
    if (type === 3 && !blobHashes(raw, F[2 * (gasAt + 6)] as number, F[2 * (gasAt + 6) + 1] as number))
      return abort(begin);
    if (type === 4 && !authorizations(raw, F[2 * (gasAt + 5)] as number, F[2 * (gasAt + 5) + 1] as number))
      return abort(begin);
  }
  str('"v":"0x');
  fieldQuantity(raw, vAt);
  str('","r":"0x');
  fieldQuantity(raw, vAt + 1);
  str('","s":"0x');
  fieldQuantity(raw, vAt + 2);
  // geth: yParity = v.Sign() for typed transactions.
  str(legacy ? '"}' : fieldIsZero(raw, vAt) ? '","yParity":"0x0"}' : '","yParity":"0x1"}');
  return true;
}

/** Drops what writeEncoded wrote of a transaction it does not take. */
function abort(begin: number): false {
  pos = begin;
  return false;
}

/** The block's transaction objects, written at pos as the inside of a JSON array. */
function writeTransactions(b: BlockRecord): void {
  const h = b.header;
  const location = locationText(h.hash, h.number, h.timestamp);
  const enc = b.transactionEncodings;
  const hashes = b.transactionHashes;
  const useEncodings =
    enc !== undefined &&
    hashes !== undefined &&
    enc.raw.length === hashes.length &&
    enc.senders.length === hashes.length;
  const n = useEncodings ? hashes.length : b.transactions.length;
  for (let i = 0; i < n; i++) {
    if (i > 0) str(',');
    if (
      !useEncodings ||
      !writeEncoded(
        enc.raw[i] as Uint8Array,
        enc.senders[i] as Uint8Array,
        hashes[i] as Uint8Array,
        location,
        i,
        h.baseFeePerGas,
      )
    )
      str(writeTransaction(b.transactions[i] as TxRecord, location, i, h.baseFeePerGas));
  }
}

/** The transaction list of blockJsonHead's text, where the full list goes in. */
const EMPTY_LIST = '"transactions":[]';

/** The writer whose block's text the buffer holds now (see blockWithTransactionsWriter). */
let holder: object | undefined;

/** Writes the block's JSON with its transaction objects at the start of the buffer; returns its length. */
function writeBlock(b: BlockRecord): number {
  // A block far larger than the usual ones does not keep its buffer for the rest of the process.
  if (buf.length > 1 << 24) buf = new Uint8Array(1 << 20);
  holder = undefined;
  const head = blockJsonHead(b, false, '');
  const cut = head.indexOf(EMPTY_LIST) + EMPTY_LIST.length - 1;
  if (cut < EMPTY_LIST.length) throw new Error('block JSON without a transaction list');
  pos = 0;
  str(head.slice(0, cut));
  writeTransactions(b);
  str(head.slice(cut));
  return pos;
}

/**
 * The block's JSON with its transaction objects (what blockText(b, true) is), written where it is
 * needed: it is written here once (its length is needed up front), and write() copies it from
 * the buffer straight into the reply when no other block was written in between (else writes it
 * again: the same bytes). A cold full block is mostly asked once; this way its ~250 KB are not
 * also copied into memory of their own and kept (the memo makes that copy when it is asked again).
 */
export function blockWithTransactionsWriter(b: BlockRecord): AsciiWriter {
  const length = writeBlock(b);
  const self: AsciiWriter = {
    length,
    write(out, at) {
      if (holder !== self) {
        if (writeBlock(b) !== length) throw new Error('block text: a different length on writing again');
        holder = self;
      }
      out.set(buf.subarray(0, length), at);
      return at + length;
    },
  };
  holder = self;
  return self;
}

/** The block's JSON with its transaction objects (what blockText(b, true) is), as ASCII bytes of their own. */
export function blockAsciiWithTransactions(b: BlockRecord): Uint8Array {
  const writer = blockWithTransactionsWriter(b);
  const out = new Uint8Array(writer.length);
  writer.write(out, 0);
  return out;
}
