// OP-stack deposit transactions (EIP-2718 type 0x7e), as op-geth's core/types/deposit_tx.go
// encodes them: 0x7e ++ rlp([sourceHash, from, to, mint, value, gas, isSystemTx, data]). They
// carry no signature and no nonce (the sender is in the encoding; the nonce the deposit used is
// recorded in its receipt from Regolith on). Their hash is keccak256 of the encoding, as for
// every typed transaction.
//
// The decoder takes hostile bytes (an upstream's, a block's): every field is checked for shape and
// canonical form as geth's rlp package does (no leading zero bytes in integers, a bool is empty or
// 0x01, gas fits uint64) and each failure is a RangeError naming the field.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from './keccak.js';
import { bytesToBigInt } from './hex.js';
import type { Bytes } from './types.js';

/** The EIP-2718 type byte of OP-stack deposit transactions. */
export const DEPOSIT_TX_TYPE = 0x7e;

export interface DepositTx {
  /** 32 bytes: what on L1 (or in the protocol) this deposit comes from. */
  sourceHash: Bytes;
  /** 20 bytes: the sender (deposits are not signed). */
  from: Bytes;
  /** 20 bytes, or null for a contract creation. */
  to: Bytes | null;
  /** Wei minted on L2 before the value transfer (0 when none: the encoding does not tell 0 from absent). */
  mint: bigint;
  value: bigint;
  gas: bigint;
  /** Exempt from the L2 gas limit (pre-Regolith system transactions). */
  isSystemTx: boolean;
  data: Bytes;
}

const UINT256_MAX = (1n << 256n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;
const EMPTY = new Uint8Array(0);
const TRUE = Uint8Array.of(1);

function checkUint(v: bigint, max: bigint, what: string): bigint {
  if (typeof v !== 'bigint' || v < 0n || v > max) throw new RangeError(`deposit tx: ${what} out of range`);
  return v;
}

function checkBytes(v: Bytes, length: number, what: string): Bytes {
  if (!(v instanceof Uint8Array) || v.length !== length)
    throw new RangeError(`deposit tx: ${what} must be ${length} bytes`);
  return v;
}

function checkData(v: Bytes): Bytes {
  if (!(v instanceof Uint8Array)) throw new RangeError('deposit tx: data must be bytes');
  return v;
}

/** The canonical encoding: 0x7e ++ rlp([...]). Throws a RangeError on a field out of shape. */
export function encodeDepositTx(tx: DepositTx): Bytes {
  const payload = RLP.encode([
    checkBytes(tx.sourceHash, 32, 'sourceHash'),
    checkBytes(tx.from, 20, 'from'),
    tx.to === null ? EMPTY : checkBytes(tx.to, 20, 'to'),
    checkUint(tx.mint, UINT256_MAX, 'mint'),
    checkUint(tx.value, UINT256_MAX, 'value'),
    checkUint(tx.gas, UINT64_MAX, 'gas'),
    tx.isSystemTx ? TRUE : EMPTY,
    checkData(tx.data),
  ]);
  const out = new Uint8Array(1 + payload.length);
  out[0] = DEPOSIT_TX_TYPE;
  out.set(payload, 1);
  return out;
}

/** keccak256 of the encoding. */
export function depositTxHash(tx: DepositTx): Bytes {
  return keccak256(encodeDepositTx(tx));
}

type Nested = Uint8Array | Nested[];

function field(f: Nested[], i: number, what: string): Uint8Array {
  const v = f[i];
  if (!(v instanceof Uint8Array)) throw new RangeError(`deposit tx: ${what} must be a byte string`);
  return v;
}

/** A canonical unsigned integer of at most `maxBytes` bytes (no leading zero byte). */
function uint(f: Nested[], i: number, maxBytes: number, what: string): bigint {
  const b = field(f, i, what);
  if (b.length > maxBytes) throw new RangeError(`deposit tx: ${what} longer than ${maxBytes} bytes`);
  if (b.length > 0 && b[0] === 0) throw new RangeError(`deposit tx: ${what} has a leading zero byte`);
  return bytesToBigInt(b);
}

/**
 * A deposit transaction from its encoding (type byte included). Strict: the type byte, one RLP
 * list of exactly 8 items and nothing after it, each field in its canonical form.
 */
export function decodeDepositTx(bytes: Bytes): DepositTx {
  if (!(bytes instanceof Uint8Array) || bytes.length === 0) throw new RangeError('deposit tx: empty encoding');
  if (bytes[0] !== DEPOSIT_TX_TYPE)
    throw new RangeError(`deposit tx: type byte 0x${(bytes[0] as number).toString(16)}, expected 0x7e`);
  if (bytes.length === 1) throw new RangeError('deposit tx: no payload after the type byte');
  let decoded: Nested;
  try {
    decoded = RLP.decode(bytes.subarray(1)) as Nested;
  } catch (err) {
    throw new RangeError(`deposit tx: malformed RLP: ${(err as Error).message}`);
  }
  if (decoded instanceof Uint8Array) throw new RangeError('deposit tx: payload is not an RLP list');
  if (decoded.length !== 8) throw new RangeError(`deposit tx: expected 8 fields, got ${decoded.length}`);
  const f = decoded;
  const sourceHash = field(f, 0, 'sourceHash');
  if (sourceHash.length !== 32) throw new RangeError('deposit tx: sourceHash must be 32 bytes');
  const from = field(f, 1, 'from');
  if (from.length !== 20) throw new RangeError('deposit tx: from must be 20 bytes');
  const to = field(f, 2, 'to');
  if (to.length !== 0 && to.length !== 20) throw new RangeError('deposit tx: to must be 20 bytes or empty');
  const system = field(f, 6, 'isSystemTx');
  if (system.length > 1 || (system.length === 1 && system[0] !== 1))
    throw new RangeError('deposit tx: isSystemTx must be empty or 0x01');
  return {
    sourceHash,
    from,
    to: to.length === 0 ? null : to,
    mint: uint(f, 3, 32, 'mint'),
    value: uint(f, 4, 32, 'value'),
    gas: uint(f, 5, 8, 'gas'),
    isSystemTx: system.length === 1,
    data: field(f, 7, 'data'),
  };
}

/** A JSON-RPC quantity ("0x" and minimal hex digits), bounded. */
function jsonQuantity(v: unknown, max: bigint, what: string): bigint {
  if (typeof v !== 'string' || !/^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/.test(v) || v.length > 66)
    throw new RangeError(`deposit tx JSON: ${what} is not a quantity`);
  const n = BigInt(v);
  if (n > max) throw new RangeError(`deposit tx JSON: ${what} out of range`);
  return n;
}

/** JSON-RPC data of `length` bytes (any length when undefined). */
function jsonData(v: unknown, length: number | undefined, what: string): Bytes {
  if (typeof v !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(v))
    throw new RangeError(`deposit tx JSON: ${what} is not data`);
  const b = Uint8Array.from(Buffer.from(v.slice(2), 'hex'));
  if (length !== undefined && b.length !== length)
    throw new RangeError(`deposit tx JSON: ${what} must be ${length} bytes`);
  return b;
}

/**
 * A deposit transaction from a JSON-RPC transaction object (op-geth's, anvil's): the fields the
 * encoding holds. `mint` and `isSystemTx` are optional in the JSON (op-geth leaves out a zero mint
 * and a false isSystemTx; anvil writes the flag as "0x1"), `to` is absent or null for a creation;
 * everything else is required. The object is untrusted input: each field
 * is checked and a RangeError names the first bad one. The caller compares the hash of the
 * encoding with the object's `hash` (depositTxHash).
 */
export function depositTxFromJson(json: unknown): DepositTx {
  if (typeof json !== 'object' || json === null) throw new RangeError('deposit tx JSON: not an object');
  const o = json as Record<string, unknown>;
  if (o.type === undefined || jsonQuantity(o.type, 0xffn, 'type') !== BigInt(DEPOSIT_TX_TYPE))
    throw new RangeError('deposit tx JSON: type is not 0x7e');
  // op-geth writes a boolean; anvil 1.7.1 writes the quantity "0x1" (and "0x0").
  const flag = o.isSystemTx ?? false;
  const isSystemTx = flag === true || flag === '0x1' ? true : flag === false || flag === '0x0' ? false : undefined;
  if (isSystemTx === undefined) throw new RangeError('deposit tx JSON: isSystemTx is not a boolean');
  return {
    sourceHash: jsonData(o.sourceHash, 32, 'sourceHash'),
    from: jsonData(o.from, 20, 'from'),
    to: o.to === null || o.to === undefined ? null : jsonData(o.to, 20, 'to'),
    mint: o.mint === undefined || o.mint === null ? 0n : jsonQuantity(o.mint, UINT256_MAX, 'mint'),
    value: jsonQuantity(o.value, UINT256_MAX, 'value'),
    gas: jsonQuantity(o.gas, UINT64_MAX, 'gas'),
    isSystemTx,
    data: jsonData(o.input ?? o.data, undefined, 'input'),
  };
}
