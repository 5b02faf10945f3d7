// geth's log JSON (types.Log gencodec field order, plus blockTimestamp and removed:false) written
// directly as text: every value is a hex string or a boolean, so nothing needs escaping.
//
// It lives in core because two layers write it: the store keeps each block's logs as text at
// import (a ready-to-serve encoding: a dense getLogs answer is slices of one row per block), and
// the rpc writes it for logs read from the per-log rows. rpc's tests compare both with
// JSON.stringify of formatLog.
import type { LogRecord } from './types.js';

/**
 * Hex of a byte view without allocating a Buffer for it: Buffer's own hexSlice works on any
 * Uint8Array (a log answer hexes about seven values per log; Buffer views were a fifth of its
 * time, and their garbage more). Falls back to a view where hexSlice is missing.
 */
const hexSlice = (Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }).hexSlice;
export const hexOfBytes: (b: Uint8Array) => string =
  hexSlice !== undefined ? (b) => hexSlice.call(b, 0, b.length) : (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/**
 * Writes logs one by one, in block then log order. The block and transaction fields repeat
 * across the logs of a block / transaction, so their text is made once per block / transaction.
 */
export class LogJsonWriter {
  private blockOf: bigint | undefined;
  private blockHashOf: Uint8Array | undefined;
  private blockNumberText = '';
  private blockText = '';
  private txOf = -1;
  private txText = '';

  /** The JSON object of one log. */
  write(log: LogRecord): string {
    if (log.blockNumber !== this.blockOf || log.blockHash !== this.blockHashOf) {
      this.blockOf = log.blockNumber;
      this.blockHashOf = log.blockHash;
      this.blockNumberText = `"blockNumber":"0x${log.blockNumber.toString(16)}"`;
      this.blockText = `"blockHash":"0x${hexOfBytes(log.blockHash)}","blockTimestamp":"0x${log.blockTimestamp.toString(16)}"`;
      this.txOf = -1;
    }
    if (log.transactionIndex !== this.txOf) {
      this.txOf = log.transactionIndex;
      this.txText = `"transactionHash":"0x${hexOfBytes(log.transactionHash)}","transactionIndex":"0x${log.transactionIndex.toString(16)}"`;
    }
    let topics = '';
    for (let t = 0; t < log.topics.length; t++) topics += `${t === 0 ? '' : ','}"0x${hexOfBytes(log.topics[t] as Uint8Array)}"`;
    return (
      `{"address":"0x${hexOfBytes(log.address)}","topics":[${topics}],"data":"0x${hexOfBytes(log.data)}",${this.blockNumberText},` +
      `${this.txText},${this.blockText},"logIndex":"0x${log.logIndex.toString(16)}","removed":false}`
    );
  }
}
