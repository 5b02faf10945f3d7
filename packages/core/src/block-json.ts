// geth's block JSON (v1.16 RPCMarshalBlock: a map, so keys come out sorted; fork fields only when
// the header has them; plus the spec's totalDifficulty) and header JSON (RPCMarshalHeader, the
// same header members alone) written directly as text: every value is a hex string, so nothing
// needs escaping and no intermediate object or key sort is needed.
//
// It lives in core because two layers write it: the store writes a block's hashes-only answer
// from its rows (header, body, total difficulty, tx hashes) without building a block record, and
// the rpc formatters write it from block records and for full-transaction answers (their object
// form is its parse). rpc's format.test.ts checks its output against hand-written geth shapes
// (every fork field, withdrawals, uncles); block-text.test.ts checks the store's answers against
// the text written from each block's decoded rows.
import { hexInto } from './hex.js';
import type { Bytes, HeaderRecord, WithdrawalRecord } from './types.js';

/** What the block JSON shows besides its transactions. */
export interface BlockJsonFields {
  header: HeaderRecord;
  size: number;
  totalDifficulty: bigint;
  uncleHashes: Bytes[];
  withdrawals?: WithdrawalRecord[];
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const q = (v: bigint | number): string => v.toString(16);

/** `"0x<hash>"` strings joined by commas: a JSON array's inside. */
export function hashList(hashes: readonly Uint8Array[]): string {
  let s = '';
  for (let i = 0; i < hashes.length; i++) s += `${i === 0 ? '' : ','}"0x${hex(hashes[i] as Uint8Array)}"`;
  return s;
}

/**
 * The header's members in key order, with the block's own members where they sort: `size` (its
 * text, or absent), `body` (totalDifficulty and transactions, each followed by a comma) before
 * transactionsRoot, `tail` (uncles and withdrawals, each preceded by a comma) after it.
 */
function headerMembers(h: HeaderRecord, size: string | undefined, body: string, tail: string): string {
  let s = '{';
  if (h.baseFeePerGas !== undefined) s += `"baseFeePerGas":"0x${q(h.baseFeePerGas)}",`;
  if (h.blobGasUsed !== undefined) s += `"blobGasUsed":"0x${q(h.blobGasUsed)}",`;
  s += `"difficulty":"0x${q(h.difficulty)}",`;
  if (h.excessBlobGas !== undefined) s += `"excessBlobGas":"0x${q(h.excessBlobGas)}",`;
  s +=
    `"extraData":"0x${hex(h.extraData)}","gasLimit":"0x${q(h.gasLimit)}","gasUsed":"0x${q(h.gasUsed)}",` +
    `"hash":"0x${hex(h.hash)}","logsBloom":"0x${hex(h.logsBloom)}","miner":"0x${hex(h.coinbase)}",` +
    `"mixHash":"0x${hex(h.mixHash)}","nonce":"0x${hex(h.nonce)}","number":"0x${q(h.number)}",`;
  if (h.parentBeaconBlockRoot !== undefined) s += `"parentBeaconBlockRoot":"0x${hex(h.parentBeaconBlockRoot)}",`;
  s += `"parentHash":"0x${hex(h.parentHash)}","receiptsRoot":"0x${hex(h.receiptsRoot)}",`;
  if (h.requestsHash !== undefined) s += `"requestsHash":"0x${hex(h.requestsHash)}",`;
  s += `"sha3Uncles":"0x${hex(h.uncleHash)}",`;
  if (size !== undefined) s += `"size":"0x${size}",`;
  s += `"stateRoot":"0x${hex(h.stateRoot)}","timestamp":"0x${q(h.timestamp)}",`;
  s += `${body}"transactionsRoot":"0x${hex(h.transactionsRoot)}"${tail}`;
  if (h.withdrawalsRoot !== undefined) s += `,"withdrawalsRoot":"0x${hex(h.withdrawalsRoot)}"`;
  return `${s}}`;
}

/**
 * The header alone as geth v1.16's RPCMarshalHeader writes it (eth_getHeaderByNumber/ByHash):
 * the block's JSON without size, totalDifficulty, transactions, uncles and withdrawals.
 */
export function headerJson(h: HeaderRecord): string {
  return headerMembers(h, undefined, '', '');
}

/**
 * The block's JSON with `transactions` (the inside of its JSON array: hashList's text, or the
 * transaction objects') as its transaction list; an uncle (`uncle: true`) as geth marshals it: a
 * block with an empty body (no transactions member, no uncles) and totalDifficulty null.
 */
export function blockJsonHead(b: BlockJsonFields, uncle = false, transactions = ''): string {
  const body = uncle
    ? '"totalDifficulty":null,'
    : `"totalDifficulty":"0x${q(b.totalDifficulty)}","transactions":[${transactions}],`;
  let tail = `,"uncles":[${uncle ? '' : hashList(b.uncleHashes)}]`;
  if (b.withdrawals !== undefined && !uncle) {
    tail += ',"withdrawals":[';
    b.withdrawals.forEach((w, i) => {
      tail += `${i === 0 ? '' : ','}{"index":"0x${q(w.index)}","validatorIndex":"0x${q(w.validatorIndex)}","address":"0x${hex(w.address)}","amount":"0x${q(w.amount)}"}`;
    });
    tail += ']';
  }
  return headerMembers(b.header, q(b.size), body, tail);
}

/** Where the transaction list's inside goes in blockJsonHead's text written without transactions. */
const TXS_OPEN = '"transactions":[';

/**
 * blockJsonHead(b, false, hashList(hashes)) as ASCII bytes, the hashes given as their
 * concatenation (32 bytes each, as the store keeps a block's tx hashes): the same bytes, with the
 * hashes' hex written straight into the answer instead of through a string per hash.
 */
export function blockJsonAscii(b: BlockJsonFields, txHashes: Uint8Array): Uint8Array {
  if (txHashes.length % 32 !== 0) throw new Error('block JSON: tx hashes are not 32 bytes each');
  const head = blockJsonHead(b, false, '');
  const cut = head.indexOf(TXS_OPEN) + TXS_OPEN.length;
  if (cut < TXS_OPEN.length) throw new Error('block JSON without a transaction list');
  const n = txHashes.length / 32;
  const out = Buffer.allocUnsafe(head.length + n * 68 + (n > 0 ? n - 1 : 0));
  let at = out.write(head.slice(0, cut), 0, 'latin1');
  for (let i = 0; i < n; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    out[at++] = 0x22; // "
    out[at++] = 0x30; // 0
    out[at++] = 0x78; // x
    at = hexInto(txHashes.subarray(i * 32, i * 32 + 32), out, at);
    out[at++] = 0x22;
  }
  at += out.write(head.slice(cut), at, 'latin1');
  if (at !== out.length) throw new Error('block JSON: length mismatch');
  return out;
}
