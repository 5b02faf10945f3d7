// trace_rawTransaction's transaction as a call: a signed transaction decoded under the chain's
// rules, its signer as `from` and its fields as eth_call's transaction object.
import type { Common } from '@ethereumjs/common';
import { createTxFromRLP } from '@ethereumjs/tx';
import type { TypedTransaction } from '@ethereumjs/tx';
import { bytesToBigInt } from '@ethereumjs/util';
import type { Bytes } from '@chainnode/core';
import type { CallArgs } from '../../call-args.js';

/** The call a signed transaction makes; throws for one that does not decode or recover a signer. */
export function rawTxCallArgs(common: Common, raw: Bytes): CallArgs {
  const tx = createTxFromRLP(raw, { common }) as TypedTransaction;
  const t = tx as unknown as Record<string, unknown>;
  const args: CallArgs = {
    from: tx.getSenderAddress().bytes,
    to: tx.to?.bytes ?? null,
    gas: tx.gasLimit,
    value: tx.value,
    input: tx.data,
    nonce: tx.nonce,
  };
  if (typeof t.gasPrice === 'bigint') args.gasPrice = t.gasPrice;
  if (typeof t.maxFeePerGas === 'bigint') args.maxFeePerGas = t.maxFeePerGas;
  if (typeof t.maxPriorityFeePerGas === 'bigint') args.maxPriorityFeePerGas = t.maxPriorityFeePerGas;
  if (typeof t.maxFeePerBlobGas === 'bigint') args.maxFeePerBlobGas = t.maxFeePerBlobGas;
  if (Array.isArray(t.blobVersionedHashes)) args.blobVersionedHashes = t.blobVersionedHashes as Bytes[];
  if (Array.isArray(t.accessList))
    args.accessList = (t.accessList as [Bytes, Bytes[]][]).map(([address, storageKeys]) => ({ address, storageKeys }));
  if (Array.isArray(t.authorizationList))
    args.authorizationList = (t.authorizationList as Bytes[][]).map((a) => ({
      chainId: bytesToBigInt(a[0] as Bytes),
      address: a[1] as Bytes,
      nonce: bytesToBigInt(a[2] as Bytes),
      yParity: bytesToBigInt(a[3] as Bytes),
      r: bytesToBigInt(a[4] as Bytes),
      s: bytesToBigInt(a[5] as Bytes),
    }));
  return args;
}
