// geth's log JSON (types.Log gencodec field order, plus blockTimestamp and removed:false) written
// directly as text: every value is a hex string or a boolean, so nothing needs escaping.
//
// It lives in core because two layers write it: the store keeps each block's logs as text at
// import (a ready-to-serve encoding: a dense getLogs answer is slices of one row per block), and
// the rpc writes it for logs read from the per-log rows. rpc's tests compare both with
// JSON.stringify of formatLog.
import { HEX_DIGITS, hexInto, hexOfBytes } from './hex.js';
import type { LogRecord } from './types.js';

/** `text` (ASCII) written at `at` of `out`; returns the end. */
function asciiInto(text: Uint8Array, out: Uint8Array, at: number): number {
  out.set(text, at);
  return at + text.length;
}

const ascii = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const ADDRESS_OPEN = ascii('{"address":"0x');
const TOPICS_OPEN = ascii('","topics":[');
const DATA_OPEN = ascii('],"data":"0x');
const DATA_CLOSE = ascii('",');
const TX_HASH_OPEN = ascii(',"transactionHash":"0x');
const TX_INDEX_OPEN = ascii('","transactionIndex":"0x');
const LOG_INDEX_OPEN = ascii(',"logIndex":"0x');
const LOG_CLOSE = ascii('","removed":false}');
/** The bytes of a log's text besides its block's fields, its values' hex and its indices' digits. */
const FIXED =
  ADDRESS_OPEN.length +
  TOPICS_OPEN.length +
  DATA_OPEN.length +
  DATA_CLOSE.length +
  TX_HASH_OPEN.length +
  TX_INDEX_OPEN.length +
  2 + // the quote closing the transaction index and the comma after it
  LOG_INDEX_OPEN.length +
  LOG_CLOSE.length;

/** The hex digits of a non-negative integer (no 0x) written at `at` of `out`; returns the end. */
function digitsInto(n: number, out: Uint8Array, at: number): number {
  const digits = hexDigits(n);
  for (let d = digits - 1, v = n; d >= 0; d--, v = Math.floor(v / 16)) out[at + d] = HEX_DIGITS[v % 16] as number;
  return at + digits;
}

/** Hex digits of a non-negative integer (at least one). */
function hexDigits(n: number): number {
  let d = 1;
  while (n >= 16) {
    n = Math.floor(n / 16);
    d++;
  }
  return d;
}

/**
 * Writes logs one by one, in block then log order. The block and transaction fields repeat
 * across the logs of a block / transaction, so their text is made once per block / transaction.
 * write() gives a log's text as a string; byteLength() and writeInto() give the same text as ASCII
 * bytes written where the caller wants them (a getLogs answer, a stored row), with no string
 * made per log.
 */
export class LogJsonWriter {
  private blockOf: bigint | undefined;
  private blockHashOf: Uint8Array | undefined;
  private blockNumberText = '';
  private blockText = '';
  private txOf = -1;
  private txText = '';
  /** The block's fields as bytes (writeInto), made once per block. */
  private blockNumberBytes: Uint8Array | undefined;
  private blockBytes: Uint8Array | undefined;

  private atBlock(log: LogRecord): void {
    if (log.blockNumber !== this.blockOf || log.blockHash !== this.blockHashOf) {
      this.blockOf = log.blockNumber;
      this.blockHashOf = log.blockHash;
      this.blockNumberText = `"blockNumber":"0x${log.blockNumber.toString(16)}"`;
      this.blockText = `"blockHash":"0x${hexOfBytes(log.blockHash)}","blockTimestamp":"0x${log.blockTimestamp.toString(16)}"`;
      this.blockNumberBytes = undefined;
      this.blockBytes = undefined;
      this.txOf = -1;
    }
  }

  /** The JSON object of one log. */
  write(log: LogRecord): string {
    this.atBlock(log);
    if (log.transactionIndex !== this.txOf) {
      this.txOf = log.transactionIndex;
      this.txText = `"transactionHash":"0x${hexOfBytes(log.transactionHash)}","transactionIndex":"0x${log.transactionIndex.toString(16)}"`;
    }
    let topics = '';
    for (let t = 0; t < log.topics.length; t++)
      topics += `${t === 0 ? '' : ','}"0x${hexOfBytes(log.topics[t] as Uint8Array)}"`;
    return (
      `{"address":"0x${hexOfBytes(log.address)}","topics":[${topics}],"data":"0x${hexOfBytes(log.data)}",${this.blockNumberText},` +
      `${this.txText},${this.blockText},"logIndex":"0x${log.logIndex.toString(16)}","removed":false}`
    );
  }

  /** The length of write(log)'s text: the bytes writeInto() writes. */
  byteLength(log: LogRecord): number {
    this.atBlock(log);
    // Every value's own length (a 20-byte address, 32-byte topics and hash as stored), so that the
    // bytes written are always the bytes counted.
    let topics = log.topics.length === 0 ? 0 : log.topics.length - 1;
    for (const t of log.topics) topics += 4 + 2 * t.length;
    return (
      FIXED +
      2 * log.address.length +
      topics +
      2 * log.transactionHash.length +
      2 * log.data.length +
      this.blockNumberText.length +
      this.blockText.length +
      hexDigits(log.transactionIndex) +
      hexDigits(log.logIndex)
    );
  }

  /** write(log)'s text as ASCII bytes at `at` of `out` (room for byteLength(log)); returns the end. */
  writeInto(log: LogRecord, out: Uint8Array, at: number): number {
    this.atBlock(log);
    this.blockNumberBytes ??= ascii(this.blockNumberText);
    this.blockBytes ??= ascii(this.blockText);
    at = asciiInto(ADDRESS_OPEN, out, at);
    at = hexInto(log.address, out, at);
    at = asciiInto(TOPICS_OPEN, out, at);
    for (let t = 0; t < log.topics.length; t++) {
      if (t > 0) out[at++] = 0x2c; // ,
      out[at++] = 0x22; // "
      out[at++] = 0x30; // 0
      out[at++] = 0x78; // x
      at = hexInto(log.topics[t] as Uint8Array, out, at);
      out[at++] = 0x22;
    }
    at = asciiInto(DATA_OPEN, out, at);
    at = hexInto(log.data, out, at);
    at = asciiInto(DATA_CLOSE, out, at);
    at = asciiInto(this.blockNumberBytes, out, at);
    at = asciiInto(TX_HASH_OPEN, out, at);
    at = hexInto(log.transactionHash, out, at);
    at = asciiInto(TX_INDEX_OPEN, out, at);
    at = digitsInto(log.transactionIndex, out, at);
    out[at++] = 0x22; // "
    out[at++] = 0x2c; // ,
    at = asciiInto(this.blockBytes, out, at);
    at = asciiInto(LOG_INDEX_OPEN, out, at);
    at = digitsInto(log.logIndex, out, at);
    return asciiInto(LOG_CLOSE, out, at);
  }
}

/**
 * The JSON array of `logs` as ASCII bytes (LogJsonWriter.writeInto, no string per log), in a
 * Buffer of its own. `pause` is awaited after every 128 logs (a caller's yield to other work or
 * check of a deadline, which may throw).
 */
export async function logsJsonAscii(
  logs: readonly LogRecord[],
  pause: () => Promise<void> | void = () => undefined,
): Promise<Uint8Array> {
  const writer = new LogJsonWriter();
  let out = Buffer.allocUnsafeSlow(2 + logs.length * 640);
  let at = 0;
  out[at++] = 0x5b; // [
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i] as LogRecord;
    const need = at + writer.byteLength(log) + 2;
    if (need > out.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(need, out.length * 2));
      out.copy(grown, 0, 0, at);
      out = grown;
    }
    if (i > 0) out[at++] = 0x2c; // ,
    at = writer.writeInto(log, out, at);
    if ((i & 127) === 127) await pause();
  }
  out[at++] = 0x5d; // ]
  return out.subarray(0, at);
}
