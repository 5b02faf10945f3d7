// Decoders for untrusted positional params. Every failure is an InvalidParamsError whose
// message follows geth's wording: "invalid argument <i>: <what was wrong>", or the arity
// messages of geth's rpc package ("missing value for required argument 1", "too many
// arguments, want at most 2").
import { hexDigitsToBytes, InvalidParamsError } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';

export type BlockTag = 'latest' | 'earliest' | 'pending' | 'safe' | 'finalized';

/** A block parameter of eth_getBlockByNumber & co: a tag or a number. */
export type BlockNumberParam = { kind: 'tag'; tag: BlockTag } | { kind: 'number'; number: bigint };

/** EIP-1898 block parameter (eth_getStorageAt, eth_getProof): also a hash. */
export type BlockSelector = BlockNumberParam | { kind: 'hash'; hash: Bytes; requireCanonical: boolean };

const TAGS: ReadonlySet<string> = new Set(['latest', 'earliest', 'pending', 'safe', 'finalized']);
const MAX_INT64 = (1n << 63n) - 1n;

/** Thrown by the value decoders; the arity wrapper prefixes "invalid argument <i>: ". */
export class ParamError extends Error {}

/**
 * Checks the argument count against geth's rules and runs `decode` with a per-argument error
 * prefix. The first `required` arguments must be present and non-null (geth's non-pointer
 * parameters); the rest up to `want` are optional (geth's pointer parameters: omitted or null
 * reaches the decoder as undefined/null, which picks the default).
 */
export function decodeArgs<T>(
  params: unknown[],
  want: number,
  decode: (arg: (i: number) => unknown) => T,
  required = want,
): T {
  if (params.length > want) throw new InvalidParamsError(`too many arguments, want at most ${want}`);
  for (let i = 0; i < required; i++) {
    if (params[i] === undefined || params[i] === null) {
      throw new InvalidParamsError(`missing value for required argument ${i}`);
    }
  }
  let current = 0;
  try {
    return decode((i) => {
      current = i;
      return params[i];
    });
  } catch (err) {
    if (err instanceof ParamError) throw new InvalidParamsError(`invalid argument ${current}: ${err.message}`);
    throw err;
  }
}

function hexDigitsOk(body: string): boolean {
  return /^[0-9a-fA-F]*$/.test(body);
}

function hexBody(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new ParamError(`${what}: expected a hex string, got ${jsonType(value)}`);
  if (value.length === 0) throw new ParamError('empty hex string');
  if (!value.startsWith('0x') && !value.startsWith('0X')) throw new ParamError('hex string without 0x prefix');
  return value.slice(2);
}

/** geth's hexutil.DecodeBig / DecodeUint64 rules: minimal hex, no leading zeros. */
export function decodeQuantity(value: unknown, what: string, maxBits = 256): bigint {
  const body = hexBody(value, what);
  if (body.length === 0) throw new ParamError(`hex string "0x"`);
  if (!hexDigitsOk(body)) throw new ParamError('invalid hex string');
  if (body.length > 1 && body[0] === '0') throw new ParamError('hex number with leading zero digits');
  const n = BigInt(`0x${body}`);
  if (n >> BigInt(maxBits) !== 0n) throw new ParamError(`hex number > ${maxBits} bits`);
  return n;
}

/** A JSON number decoded into a Go uintN (Erigon's plain-number arguments: page sizes, nonces). */
export function decodeGoUint(value: unknown, what: string, bits: 8 | 16 | 64): number {
  if (typeof value !== 'number')
    throw new ParamError(`${what}: json: cannot unmarshal ${jsonType(value)} into Go value of type uint${bits}`);
  if (!Number.isSafeInteger(value) || value < 0 || (bits < 64 && value >= 2 ** bits))
    throw new ParamError(`${what}: json: cannot unmarshal number ${value} into Go value of type uint${bits}`);
  return value;
}

/** Fixed-length data (hash, address): 0x prefix, even length, exact size. */
export function decodeFixedData(value: unknown, bytes: number, typeName: string): Bytes {
  const body = hexBody(value, typeName);
  if (body.length % 2 !== 0) throw new ParamError('hex string has odd length');
  const out = hexDigitsToBytes(body);
  if (out === undefined) throw new ParamError('invalid hex string');
  if (out.length !== bytes) {
    throw new ParamError(`hex string has length ${body.length}, want ${bytes * 2} for ${typeName}`);
  }
  return out;
}

export function decodeHash(value: unknown): Bytes {
  return decodeFixedData(value, 32, 'common.Hash');
}

export function decodeAddress(value: unknown): Bytes {
  return decodeFixedData(value, 20, 'common.Address');
}

export function decodeBool(value: unknown): boolean {
  if (typeof value !== 'boolean') throw new ParamError(`expected a boolean, got ${jsonType(value)}`);
  return value;
}

/**
 * A storage slot as geth's decodeHash reads it: optional 0x, odd length padded, at most
 * 32 bytes, left-padded to 32. Returns the slot and the byte length the caller gave (geth's
 * eth_getProof echoes 32-byte keys as data and shorter ones as quantities).
 */
export function decodeStorageKey(value: unknown): { slot: Bytes; inputLength: number } {
  if (typeof value !== 'string') throw new ParamError(`storage key: expected a hex string, got ${jsonType(value)}`);
  let body = value.startsWith('0x') || value.startsWith('0X') ? value.slice(2) : value;
  if (body.length % 2 !== 0) body = `0${body}`;
  const raw = hexDigitsToBytes(body);
  if (raw === undefined) throw new ParamError('storage key: invalid hex string');
  if (raw.length > 32) throw new StorageKeyTooLongError();
  const slot = new Uint8Array(32);
  slot.set(raw, 32 - raw.length);
  return { slot, inputLength: raw.length };
}

/** Said in exactly these words (-32602), without the argument prefix. */
export class StorageKeyTooLongError extends InvalidParamsError {
  constructor() {
    super('storage key too long');
  }
}

/** Erigon's rpc.BlockNumber: a tag, a hex quantity, or a plain JSON number (as Otterscan sends). */
export function decodeErigonBlockNumber(value: unknown): BlockNumberParam {
  if (typeof value !== 'number') return decodeBlockNumber(value);
  return { kind: 'number', number: BigInt(decodeGoUint(value, 'block number', 64)) };
}

export function decodeBlockNumber(value: unknown): BlockNumberParam {
  if (typeof value === 'string' && TAGS.has(value)) return { kind: 'tag', tag: value as BlockTag };
  if (typeof value !== 'string')
    throw new ParamError(`block number: expected a hex string or tag, got ${jsonType(value)}`);
  const n = decodeQuantity(value, 'block number', 64);
  if (n > MAX_INT64) throw new ParamError('block number larger than int64');
  return { kind: 'number', number: n };
}

/** EIP-1898: a number/tag, a bare 32-byte hash, or {blockHash, requireCanonical?} / {blockNumber}. */
export function decodeBlockSelector(value: unknown): BlockSelector {
  if (typeof value === 'string') {
    if (value.length === 66 && !TAGS.has(value)) {
      return { kind: 'hash', hash: decodeHash(value), requireCanonical: false };
    }
    return decodeBlockNumber(value);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const hasHash = o.blockHash !== undefined && o.blockHash !== null;
    const hasNumber = o.blockNumber !== undefined && o.blockNumber !== null;
    if (hasHash && hasNumber) {
      throw new ParamError('cannot specify both BlockHash and BlockNumber, choose one or the other');
    }
    if (hasHash) {
      const rc = o.requireCanonical;
      if (rc !== undefined && rc !== null && typeof rc !== 'boolean') {
        throw new ParamError(`requireCanonical: expected a boolean, got ${jsonType(rc)}`);
      }
      return { kind: 'hash', hash: decodeHash(o.blockHash), requireCanonical: rc === true };
    }
    if (hasNumber) return decodeBlockNumber(o.blockNumber);
    throw new ParamError('invalid arguments; neither block nor hash specified');
  }
  throw new ParamError(`expected a block number, tag, block hash or EIP-1898 object, got ${jsonType(value)}`);
}

/** The block selector of a state method whose block parameter is optional: omitted or null is `latest` (geth). */
export function decodeOptionalBlockSelector(value: unknown): BlockSelector {
  return value === undefined || value === null ? { kind: 'tag', tag: 'latest' } : decodeBlockSelector(value);
}

/** Hex data of any length (a block's or a transaction's RLP). */
export function decodeHexData(v: unknown): Bytes {
  if (typeof v !== 'string' || !/^0[xX]([0-9a-fA-F]{2})*$/.test(v)) throw new ParamError('expected hex data');
  return Uint8Array.from(Buffer.from(v.slice(2), 'hex'));
}

/** Uncle index: a hex quantity (geth's hexutil.Uint). */
export function decodeIndex(value: unknown): bigint {
  return decodeQuantity(value, 'index', 64);
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

/** Methods without parameters: anything given is "too many arguments, want at most 0". */
export function noParams(params: unknown[]): void {
  decodeArgs(params, 0, () => undefined);
}

/**
 * A hash as geth's JSON decoding of common.Hash reports it (debug_getRawTransaction): a value that
 * is not a string, or a malformed hex string, is "json: cannot unmarshal <what> into Go value of
 * type common.Hash"; a wrong length is said plainly, as decodeHash says it.
 */
export function decodeGoHash(value: unknown): Bytes {
  const wrap = (what: string): ParamError =>
    new ParamError(`json: cannot unmarshal ${what} into Go value of type common.Hash`);
  if (typeof value !== 'string') throw wrap('non-string');
  if (!value.startsWith('0x') && !value.startsWith('0X')) throw wrap('hex string without 0x prefix');
  if (value.length % 2 !== 0) throw wrap('hex string of odd length');
  if (!hexDigitsOk(value.slice(2))) throw wrap('invalid hex string');
  return decodeHash(value);
}
