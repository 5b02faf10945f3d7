// geth's log JSON (types.Log gencodec field order, plus blockTimestamp and removed:false) written
// directly as text: every value is a hex string or a boolean, so nothing needs escaping.
//
// It lives in core because two layers write it: the store keeps each block's logs as text at
// import (a ready-to-serve encoding: a dense getLogs answer is slices of one row per block), and
// the rpc writes it for logs read from the per-log rows. rpc's tests compare both with
// JSON.stringify of formatLog.
import { hexOfBytes } from './hex.js';
import type { LogRecord } from './types.js';

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
    for (let t = 0; t < log.topics.length; t++)
      topics += `${t === 0 ? '' : ','}"0x${hexOfBytes(log.topics[t] as Uint8Array)}"`;
    return (
      `{"address":"0x${hexOfBytes(log.address)}","topics":[${topics}],"data":"0x${hexOfBytes(log.data)}",${this.blockNumberText},` +
      `${this.txText},${this.blockText},"logIndex":"0x${log.logIndex.toString(16)}","removed":false}`
    );
  }
}
