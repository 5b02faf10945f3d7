// THE method table: every method this node answers, with its params decoder, credit cost
// and handler. The dispatcher, the credit layer (via methodCosts) and the docs read from
// here; RpcSchema makes a missing or misspelled entry a compile error.
//
// Credits: each entry's `cost` is the one definition of its method's price (the spec's eight
// keep their spec 8.1 costs, the others follow Infura's table; a method Infura does not list is
// priced like the listed method doing the same reads, said at its `cost`); everything else that needs a
// price reads methodCosts(). Notifications are charged per event by the transport, at
// EVENT_CREDITS (subscriptions/hub.ts). docs/reference/methods.md is generated from here.
import type { Hex } from '@chainnode/core';
import type { JsonBlock } from './formatters/block.js';
import type { JsonLog } from './formatters/log.js';
import type { JsonAccountProof } from './formatters/proof.js';
import type { JsonAnyTransaction } from './formatters/transaction.js';
import type { JsonStateDiff } from './formatters/state-diff.js';
import type { MethodDef, Transport } from './method.js';
import { chainnode_getBlockRange } from './methods/chainnode_getBlockRange.js';
import type { BlockRangeParams, JsonRangeBlock } from './methods/chainnode_getBlockRange.js';
import { chainnode_getStateDiff } from './methods/chainnode_getStateDiff.js';
import { chainnode_getStateNodes } from './methods/chainnode_getStateNodes.js';
import type { JsonStateNodes, StateNodesParams } from './methods/chainnode_getStateNodes.js';
import { debug_getRawBlock } from './methods/debug_getRawBlock.js';
import { debug_getRawHeader } from './methods/debug_getRawHeader.js';
import { debug_getRawReceipts } from './methods/debug_getRawReceipts.js';
import { debug_getRawTransaction } from './methods/debug_getRawTransaction.js';
import { eth_blockNumber } from './methods/eth_blockNumber.js';
import { eth_chainId } from './methods/eth_chainId.js';
import { eth_getBlockByHash } from './methods/eth_getBlockByHash.js';
import { eth_getBlockByNumber } from './methods/eth_getBlockByNumber.js';
import { eth_getLogs } from './methods/eth_getLogs.js';
import type { LogFilter } from './methods/eth_getLogs.js';
import { eth_getProof } from './methods/eth_getProof.js';
import type { GetProofParams } from './methods/eth_getProof.js';
import { eth_getStorageAt } from './methods/eth_getStorageAt.js';
import type { GetStorageAtParams } from './methods/eth_getStorageAt.js';
import { eth_getTransactionByHash } from './methods/eth_getTransactionByHash.js';
import type { TransactionHashParams } from './methods/transaction-lookup.js';
import { eth_getUncleByBlockHashAndIndex } from './methods/eth_getUncleByBlockHashAndIndex.js';
import { eth_getUncleByBlockNumberAndIndex } from './methods/eth_getUncleByBlockNumberAndIndex.js';
import { eth_subscribe } from './methods/eth_subscribe.js';
import type { SubscribeParams } from './methods/eth_subscribe.js';
import { eth_unsubscribe } from './methods/eth_unsubscribe.js';
import { net_version } from './methods/net_version.js';
import { web3_clientVersion } from './methods/web3_clientVersion.js';
import { eth_getTransactionReceipt } from './methods/eth_getTransactionReceipt.js';
import { eth_getBlockReceipts } from './methods/eth_getBlockReceipts.js';
import type { GetBlockReceiptsParams } from './methods/eth_getBlockReceipts.js';
import { eth_getBlockTransactionCountByHash } from './methods/eth_getBlockTransactionCountByHash.js';
import { eth_getBlockTransactionCountByNumber } from './methods/eth_getBlockTransactionCountByNumber.js';
import { eth_getTransactionByBlockHashAndIndex } from './methods/eth_getTransactionByBlockHashAndIndex.js';
import { eth_getTransactionByBlockNumberAndIndex } from './methods/eth_getTransactionByBlockNumberAndIndex.js';
import { eth_getUncleCountByBlockHash } from './methods/eth_getUncleCountByBlockHash.js';
import { eth_getUncleCountByBlockNumber } from './methods/eth_getUncleCountByBlockNumber.js';
import { eth_getBalance } from './methods/eth_getBalance.js';
import type { AccountParams } from './methods/account.js';
import type { BlockIndexParams, BlockParams } from './methods/block-lookup.js';
import { eth_getCode } from './methods/eth_getCode.js';
import { eth_getTransactionCount } from './methods/eth_getTransactionCount.js';
import { eth_getStorageValues } from './methods/eth_getStorageValues.js';
import type { GetStorageValuesParams } from './methods/eth_getStorageValues.js';
import { eth_feeHistory } from './methods/eth_feeHistory.js';
import type { FeeHistoryParams } from './methods/eth_feeHistory.js';
import type { JsonFeeHistory } from './methods/eth_feeHistory.js';
import { eth_gasPrice } from './methods/eth_gasPrice.js';
import { eth_maxPriorityFeePerGas } from './methods/eth_maxPriorityFeePerGas.js';
import { eth_blobBaseFee } from './methods/eth_blobBaseFee.js';
import { eth_syncing } from './methods/eth_syncing.js';
import { eth_config } from './methods/eth_config.js';
import type { JsonChainConfig } from './methods/eth_config.js';
import { net_listening } from './methods/net_listening.js';
import { eth_call } from './methods/eth_call.js';
import { eth_estimateGas } from './methods/eth_estimateGas.js';
import { eth_createAccessList } from './methods/eth_createAccessList.js';
import type { CallParams } from './methods/eth_call.js';
import { eth_sendRawTransaction } from './methods/eth_sendRawTransaction.js';
import type { SendRawParams } from './methods/eth_sendRawTransaction.js';
import type { JsonAccessListResult } from './methods/eth_createAccessList.js';
import type { JsonReceipt } from './formatters/receipt.js';
import type { BlockSelector } from './params.js';
import type { JsonHeaderFields } from './formatters/block.js';
import { eth_baseFee } from './methods/eth_baseFee.js';
import { eth_getHeaderByHash } from './methods/eth_getHeaderByHash.js';
import { eth_getHeaderByNumber } from './methods/eth_getHeaderByNumber.js';
import { eth_getAccountInfo } from './methods/eth_getAccountInfo.js';
import type { JsonAccountInfo } from './methods/eth_getAccountInfo.js';
import { eth_getAccount } from './methods/eth_getAccount.js';
import type { JsonTrieAccount } from './methods/eth_getAccount.js';
import { eth_capabilities } from './methods/eth_capabilities.js';
import { eth_accounts } from './methods/eth_accounts.js';
import type { JsonCapabilities } from './methods/eth_capabilities.js';
import { eth_newFilter } from './methods/eth_newFilter.js';
import { eth_newBlockFilter } from './methods/eth_newBlockFilter.js';
import { eth_newPendingTransactionFilter } from './methods/eth_newPendingTransactionFilter.js';
import { eth_getFilterChanges } from './methods/eth_getFilterChanges.js';
import { eth_getFilterLogs } from './methods/eth_getFilterLogs.js';
import { eth_uninstallFilter } from './methods/eth_uninstallFilter.js';
import type { JsonSubscriptionLog } from './subscriptions/format.js';
import { eth_simulateV1 } from './methods/eth_simulateV1.js';
import type { JsonSimBlock, SimulateParams } from './methods/eth_simulateV1.js';
import { debug_traceTransaction } from './methods/debug_traceTransaction.js';
import type { TraceTransactionParams } from './methods/debug_traceTransaction.js';
import { debug_traceBlockByHash, debug_traceBlockByNumber } from './methods/debug_traceBlockByNumber.js';
import type { TraceBlockParams } from './methods/debug_traceBlockByNumber.js';
import { debug_traceBlock } from './methods/debug_traceBlock.js';
import type { TraceRawBlockParams } from './methods/debug_traceBlock.js';
import { debug_traceCall } from './methods/debug_traceCall.js';
import type { TraceCallParams } from './methods/debug_traceCall.js';
import { trace_block } from './methods/trace_block.js';
import { trace_get, trace_transaction } from './methods/trace_transaction.js';
import type { TraceGetParams } from './methods/trace_transaction.js';
import { trace_replayBlockTransactions, trace_replayTransaction } from './methods/trace_replay.js';
import type { JsonTraceResultsWithHash, ReplayBlockParams, ReplayTransactionParams } from './methods/trace_replay.js';
import { trace_filter } from './methods/trace_filter.js';
import type { TraceFilter } from './methods/trace_filter.js';
import { trace_call, trace_callMany, trace_rawTransaction } from './methods/trace_call.js';
import type {
  TraceCallManyParams,
  TraceCallParams as ParityTraceCallParams,
  TraceRawParams,
} from './methods/trace_call.js';
import type { JsonLocalizedTrace } from './trace-parity.js';
import type { JsonTraceResults } from '@chainnode/exec';
import type { JsonTxTrace } from './trace.js';
import { erigon_getHeaderByNumber, ots_getApiLevel, ots_hasCode } from './methods/ots_getApiLevel.js';
import {
  ots_getInternalOperations,
  ots_getTransactionError,
  ots_traceTransaction,
} from './methods/ots_traceTransaction.js';
import {
  ots_getBlockDetails,
  ots_getBlockDetailsByHash,
  ots_getBlockTransactions,
} from './methods/ots_getBlockDetails.js';
import type {
  BlockTransactionsParams,
  JsonBlockDetails,
  JsonBlockTransactions,
} from './methods/ots_getBlockDetails.js';
import { ots_getContractCreator, ots_getTransactionBySenderAndNonce } from './methods/ots_getContractCreator.js';
import type { JsonContractCreator, SenderNonceParams } from './methods/ots_getContractCreator.js';
import type { JsonInternalOperation, JsonTraceEntry } from '@chainnode/exec';
import { ots_searchTransactionsAfter, ots_searchTransactionsBefore } from './methods/ots_searchTransactions.js';
import type { JsonSearchPage, SearchParams } from './methods/ots_searchTransactions.js';
import type { BlockNumberParam } from './params.js';
import type { Bytes } from '@chainnode/core';

/** Decoded params and result type of every method. */
export interface RpcSchema {
  eth_getStorageAt: { params: GetStorageAtParams; result: Hex };
  eth_getLogs: { params: LogFilter; result: JsonLog[] };
  eth_getBlockByHash: { params: BlockParams; result: JsonBlock | null };
  eth_getBlockByNumber: { params: BlockParams; result: JsonBlock | null };
  eth_getUncleByBlockHashAndIndex: { params: BlockIndexParams; result: JsonBlock | null };
  eth_getUncleByBlockNumberAndIndex: { params: BlockIndexParams; result: JsonBlock | null };
  eth_getTransactionByHash: { params: TransactionHashParams; result: JsonAnyTransaction | null };
  eth_getProof: { params: GetProofParams; result: JsonAccountProof };
  eth_chainId: { params: void; result: Hex };
  net_version: { params: void; result: string };
  eth_blockNumber: { params: void; result: Hex };
  web3_clientVersion: { params: void; result: string };
  eth_subscribe: { params: SubscribeParams; result: Hex };
  eth_unsubscribe: { params: string; result: boolean };
  eth_getTransactionReceipt: { params: TransactionHashParams; result: JsonReceipt | null };
  eth_getBlockReceipts: { params: GetBlockReceiptsParams; result: JsonReceipt[] | null };
  eth_getBlockTransactionCountByHash: { params: BlockSelector; result: Hex | null };
  eth_getBlockTransactionCountByNumber: { params: BlockSelector; result: Hex | null };
  eth_getTransactionByBlockHashAndIndex: { params: BlockIndexParams; result: JsonAnyTransaction | null };
  eth_getTransactionByBlockNumberAndIndex: { params: BlockIndexParams; result: JsonAnyTransaction | null };
  eth_getUncleCountByBlockHash: { params: BlockSelector; result: Hex | null };
  eth_getUncleCountByBlockNumber: { params: BlockSelector; result: Hex | null };
  eth_getBalance: { params: AccountParams; result: Hex };
  eth_getCode: { params: AccountParams; result: Hex };
  eth_getTransactionCount: { params: AccountParams; result: Hex };
  eth_getStorageValues: { params: GetStorageValuesParams; result: Record<Hex, Hex[]> };
  eth_feeHistory: { params: FeeHistoryParams; result: JsonFeeHistory };
  eth_gasPrice: { params: void; result: Hex };
  eth_maxPriorityFeePerGas: { params: void; result: Hex };
  eth_blobBaseFee: { params: void; result: Hex | null };
  eth_syncing: { params: void; result: false };
  eth_config: { params: void; result: JsonChainConfig };
  net_listening: { params: void; result: boolean };
  debug_getRawHeader: { params: BlockSelector; result: Hex };
  debug_getRawBlock: { params: BlockSelector; result: Hex };
  debug_getRawTransaction: { params: Uint8Array; result: Hex };
  debug_getRawReceipts: { params: BlockSelector; result: Hex[] | null };
  chainnode_getStateDiff: { params: BlockSelector; result: JsonStateDiff };
  chainnode_getBlockRange: { params: BlockRangeParams; result: JsonRangeBlock[] };
  chainnode_getStateNodes: { params: StateNodesParams; result: JsonStateNodes };
  eth_call: { params: CallParams; result: Hex };
  eth_estimateGas: { params: CallParams; result: Hex };
  eth_createAccessList: { params: CallParams; result: JsonAccessListResult };
  eth_sendRawTransaction: { params: SendRawParams; result: Hex };
  eth_baseFee: { params: void; result: Hex | null };
  eth_getHeaderByNumber: { params: BlockSelector; result: JsonHeaderFields | null };
  eth_getHeaderByHash: { params: BlockSelector; result: JsonHeaderFields | null };
  eth_getAccountInfo: { params: AccountParams; result: JsonAccountInfo };
  eth_getAccount: { params: AccountParams; result: JsonTrieAccount | null };
  eth_capabilities: { params: void; result: JsonCapabilities };
  eth_accounts: { params: void; result: Hex[] };
  eth_newFilter: { params: LogFilter; result: Hex };
  eth_newBlockFilter: { params: void; result: Hex };
  eth_newPendingTransactionFilter: { params: boolean; result: Hex };
  eth_getFilterChanges: { params: string; result: (JsonSubscriptionLog | Hex)[] };
  eth_getFilterLogs: { params: string; result: JsonLog[] };
  eth_uninstallFilter: { params: string; result: boolean };
  eth_simulateV1: { params: SimulateParams; result: JsonSimBlock[] };
  debug_traceTransaction: { params: TraceTransactionParams; result: unknown };
  debug_traceBlockByNumber: { params: TraceBlockParams<BlockNumberParam>; result: JsonTxTrace[] };
  debug_traceBlockByHash: { params: TraceBlockParams<Bytes>; result: JsonTxTrace[] };
  debug_traceBlock: { params: TraceRawBlockParams; result: JsonTxTrace[] };
  debug_traceCall: { params: TraceCallParams; result: unknown };
  trace_block: { params: BlockSelector; result: JsonLocalizedTrace[] };
  trace_transaction: { params: Bytes; result: JsonLocalizedTrace[] | null };
  trace_get: { params: TraceGetParams; result: JsonLocalizedTrace | null };
  trace_replayTransaction: { params: ReplayTransactionParams; result: JsonTraceResults };
  trace_replayBlockTransactions: { params: ReplayBlockParams; result: JsonTraceResultsWithHash[] | null };
  trace_filter: { params: TraceFilter; result: JsonLocalizedTrace[] };
  trace_call: { params: ParityTraceCallParams; result: JsonTraceResults };
  trace_callMany: { params: TraceCallManyParams; result: JsonTraceResults[] };
  trace_rawTransaction: { params: TraceRawParams; result: JsonTraceResults };
  ots_getApiLevel: { params: void; result: number };
  ots_hasCode: { params: AccountParams; result: boolean };
  ots_traceTransaction: { params: Bytes; result: JsonTraceEntry[] };
  ots_getInternalOperations: { params: Bytes; result: JsonInternalOperation[] };
  ots_getTransactionError: { params: Bytes; result: string };
  ots_getBlockDetails: { params: BlockSelector; result: JsonBlockDetails | null };
  ots_getBlockDetailsByHash: { params: BlockSelector; result: JsonBlockDetails | null };
  ots_getBlockTransactions: { params: BlockTransactionsParams; result: JsonBlockTransactions | null };
  ots_getTransactionBySenderAndNonce: { params: SenderNonceParams; result: Hex | null };
  ots_getContractCreator: { params: Bytes; result: JsonContractCreator | null };
  ots_searchTransactionsBefore: { params: SearchParams; result: JsonSearchPage };
  ots_searchTransactionsAfter: { params: SearchParams; result: JsonSearchPage };
  erigon_getHeaderByNumber: { params: BlockSelector; result: JsonHeaderFields };
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
  eth_getTransactionReceipt,
  eth_getBlockReceipts,
  eth_getBlockTransactionCountByHash,
  eth_getBlockTransactionCountByNumber,
  eth_getTransactionByBlockHashAndIndex,
  eth_getTransactionByBlockNumberAndIndex,
  eth_getUncleCountByBlockHash,
  eth_getUncleCountByBlockNumber,
  eth_getBalance,
  eth_getCode,
  eth_getTransactionCount,
  eth_getStorageValues,
  eth_feeHistory,
  eth_gasPrice,
  eth_maxPriorityFeePerGas,
  eth_blobBaseFee,
  eth_syncing,
  eth_config,
  net_listening,
  debug_getRawHeader,
  debug_getRawBlock,
  debug_getRawTransaction,
  debug_getRawReceipts,
  chainnode_getStateDiff,
  chainnode_getBlockRange,
  chainnode_getStateNodes,
  eth_call,
  eth_estimateGas,
  eth_createAccessList,
  eth_sendRawTransaction,
  eth_baseFee,
  eth_getHeaderByNumber,
  eth_getHeaderByHash,
  eth_getAccountInfo,
  eth_getAccount,
  eth_capabilities,
  eth_accounts,
  eth_newFilter,
  eth_newBlockFilter,
  eth_newPendingTransactionFilter,
  eth_getFilterChanges,
  eth_getFilterLogs,
  eth_uninstallFilter,
  eth_simulateV1,
  debug_traceTransaction,
  debug_traceBlockByNumber,
  debug_traceBlockByHash,
  debug_traceBlock,
  debug_traceCall,
  trace_block,
  trace_transaction,
  trace_get,
  trace_replayTransaction,
  trace_replayBlockTransactions,
  trace_filter,
  trace_call,
  trace_callMany,
  trace_rawTransaction,
  ots_getApiLevel,
  ots_hasCode,
  ots_traceTransaction,
  ots_getInternalOperations,
  ots_getTransactionError,
  ots_getBlockDetails,
  ots_getBlockDetailsByHash,
  ots_getBlockTransactions,
  ots_getTransactionBySenderAndNonce,
  ots_getContractCreator,
  ots_searchTransactionsBefore,
  ots_searchTransactionsAfter,
  erigon_getHeaderByNumber,
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
