// What eth_sendRawTransaction checks before a transaction is forwarded: that it decodes (a blob
// transaction in its network form, blobs checked against their commitments and proofs), that its
// signature recovers a sender, and that it is meant for this chain; the caller then checks nonce
// and balance against the head's state (checkedCost gives what the balance must cover).
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { Capability, createBlob4844TxFromSerializedNetworkWrapper, createTxFromRLP } from '@ethereumjs/tx';
import type { TypedTransaction } from '@ethereumjs/tx';
import type { Bytes, ChainInfo, HeaderRecord } from '@chainnode/core';
import { loadKzg } from './kzg.js';

/** A transaction refused before anything was forwarded, in geth's words where geth has them. */
export class TxRefusedError extends Error {}

export interface CheckedTransaction {
  hash: Bytes;
  from: Bytes;
  nonce: bigint;
  /** gas * fee cap + value (+ blob gas * blob fee cap): what the sender's balance must cover. */
  maxCost: bigint;
}

/** Gas of one blob (EIP-4844's GAS_PER_BLOB). */
const BLOB_GAS = 131_072n;

const commons = new WeakMap<ChainInfo, Common>();

async function commonOf(info: ChainInfo): Promise<Common> {
  let c = commons.get(info);
  if (c === undefined) {
    const kzg = await loadKzg();
    c =
      commons.get(info) ??
      createCommonFromGethGenesis(info.genesis as GethGenesis, { chain: 'custom', customCrypto: { kzg } });
    commons.set(info, c);
  }
  return c;
}

/** Decodes and checks a signed transaction for the chain of `info`, under the rules of the block after `head`. */
export async function checkRawTransaction(
  info: ChainInfo,
  raw: Bytes,
  head: HeaderRecord,
): Promise<CheckedTransaction> {
  const common = (await commonOf(info)).copy();
  common.setHardfork(common.getHardforkBy({ blockNumber: head.number + 1n, timestamp: head.timestamp + 1n }));
  if (raw.length === 0) throw new TxRefusedError('typed transaction too short');
  let tx: TypedTransaction;
  try {
    tx =
      raw[0] === 3 ? createBlob4844TxFromSerializedNetworkWrapper(raw, { common }) : createTxFromRLP(raw, { common });
  } catch (err) {
    const m = (err as Error).message;
    if (/chain ?id/i.test(m))
      throw new TxRefusedError(`invalid chain id: the transaction is not for chain ${info.chainId}`);
    throw new TxRefusedError(`invalid transaction: ${m.replace(/ -> .*$/s, '').slice(0, 200)}`);
  }
  if (tx.type === 0 && !tx.supports(Capability.EIP155ReplayProtection))
    throw new TxRefusedError('only replay-protected (EIP-155) transactions allowed over RPC');
  const chainId = (tx as { chainId?: bigint }).chainId ?? tx.common.chainId();
  if (chainId !== info.chainId) throw new TxRefusedError(`invalid chain id: have ${chainId} want ${info.chainId}`);
  let from: Bytes;
  try {
    from = tx.getSenderAddress().bytes;
  } catch {
    throw new TxRefusedError('invalid sender');
  }
  const t = tx as unknown as {
    maxFeePerGas?: bigint;
    gasPrice?: bigint;
    maxFeePerBlobGas?: bigint;
    numBlobs?: () => number;
  };
  let maxCost = tx.gasLimit * (t.maxFeePerGas ?? t.gasPrice ?? 0n) + tx.value;
  if (t.maxFeePerBlobGas !== undefined && t.numBlobs !== undefined)
    maxCost += t.maxFeePerBlobGas * BLOB_GAS * BigInt(t.numBlobs());
  return { hash: tx.hash(), from, nonce: tx.nonce, maxCost };
}
