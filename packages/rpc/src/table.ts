// THE method table: every method this node answers, with its params decoder, credit cost
// and handler. The dispatcher, the credit layer (via methodCosts) and the docs read from
// here; RpcSchema makes a missing or misspelled entry a compile error.
//
// Credits: each entry's `cost` is the one definition of its method's price (the spec's eight
// keep their spec 8.1 costs, the others follow Infura's table); everything else that needs a
// price reads methodCosts(). Notifications are charged per event by the transport, at
// EVENT_CREDITS (subscriptions/hub.ts). docs/reference/methods.md is generated from here.
import type { Hex } from '@chainnode/core';
import type { JsonBlock } from './formatters/block.js';
import type { JsonLog } from './formatters/log.js';
import type { JsonAccountProof } from './formatters/proof.js';
import type { JsonTransaction } from './formatters/transaction.js';
import type { MethodDef, Transport } from './method.js';
import { eth_blockNumber } from './methods/eth_blockNumber.js';
import { eth_chainId } from './methods/eth_chainId.js';
import { eth_getBlockByHash } from './methods/eth_getBlockByHash.js';
import type { GetBlockByHashParams } from './methods/eth_getBlockByHash.js';
import { eth_getBlockByNumber } from './methods/eth_getBlockByNumber.js';
import type { GetBlockByNumberParams } from './methods/eth_getBlockByNumber.js';
import { eth_getLogs } from './methods/eth_getLogs.js';
import type { LogFilter } from './methods/eth_getLogs.js';
import { eth_getProof } from './methods/eth_getProof.js';
import type { GetProofParams } from './methods/eth_getProof.js';
import { eth_getStorageAt } from './methods/eth_getStorageAt.js';
import type { GetStorageAtParams } from './methods/eth_getStorageAt.js';
import { eth_getTransactionByHash } from './methods/eth_getTransactionByHash.js';
import type { GetTransactionByHashParams } from './methods/eth_getTransactionByHash.js';
import { eth_getUncleByBlockHashAndIndex } from './methods/eth_getUncleByBlockHashAndIndex.js';
import type { GetUncleByHashParams } from './methods/eth_getUncleByBlockHashAndIndex.js';
import { eth_getUncleByBlockNumberAndIndex } from './methods/eth_getUncleByBlockNumberAndIndex.js';
import type { GetUncleByNumberParams } from './methods/eth_getUncleByBlockNumberAndIndex.js';
import { eth_subscribe } from './methods/eth_subscribe.js';
import type { SubscribeParams } from './methods/eth_subscribe.js';
import { eth_unsubscribe } from './methods/eth_unsubscribe.js';
import { net_version } from './methods/net_version.js';
import { web3_clientVersion } from './methods/web3_clientVersion.js';

/** Decoded params and result type of every method. */
export interface RpcSchema {
  eth_getStorageAt: { params: GetStorageAtParams; result: Hex };
  eth_getLogs: { params: LogFilter; result: JsonLog[] };
  eth_getBlockByHash: { params: GetBlockByHashParams; result: JsonBlock | null };
  eth_getBlockByNumber: { params: GetBlockByNumberParams; result: JsonBlock | null };
  eth_getUncleByBlockHashAndIndex: { params: GetUncleByHashParams; result: JsonBlock | null };
  eth_getUncleByBlockNumberAndIndex: { params: GetUncleByNumberParams; result: JsonBlock | null };
  eth_getTransactionByHash: { params: GetTransactionByHashParams; result: JsonTransaction | null };
  eth_getProof: { params: GetProofParams; result: JsonAccountProof };
  eth_chainId: { params: void; result: Hex };
  net_version: { params: void; result: string };
  eth_blockNumber: { params: void; result: Hex };
  web3_clientVersion: { params: void; result: string };
  eth_subscribe: { params: SubscribeParams; result: Hex };
  eth_unsubscribe: { params: string; result: boolean };
}

export type MethodName = keyof RpcSchema;

export type MethodTable = {
  readonly [K in MethodName]: MethodDef<RpcSchema[K]['params'], RpcSchema[K]['result']>;
};

export const METHODS: MethodTable = {
  eth_getStorageAt,
  eth_getLogs,
  eth_getBlockByHash,
  eth_getBlockByNumber,
  eth_getUncleByBlockHashAndIndex,
  eth_getUncleByBlockNumberAndIndex,
  eth_getTransactionByHash,
  eth_getProof,
  eth_chainId,
  net_version,
  eth_blockNumber,
  web3_clientVersion,
  eth_subscribe,
  eth_unsubscribe,
};

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}

/** The transports a method is answered on (MethodDef.transports; both when absent). */
export function methodTransports(name: MethodName): readonly Transport[] {
  return METHODS[name].transports ?? ['http', 'ws'];
}

/** Credit cost per method name, in table order. */
export function methodCosts(): Record<MethodName, number> {
  const out = {} as Record<MethodName, number>;
  for (const name of Object.keys(METHODS) as MethodName[]) out[name] = METHODS[name].cost;
  return out;
}
