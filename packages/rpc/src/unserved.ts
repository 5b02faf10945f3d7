// The read and write methods of the execution-apis spec (src/eth/*.yaml, at the commit of the
// fixtures in ../shared/chains/execution-apis) that this node does not answer (-32601), each with
// why. The spec's other eth_ methods are in the method table; docs/json-rpc.md lists these from
// here, and rpc-compat.test.ts checks that none is also served and that every method with
// fixtures is one or the other.
export const UNSERVED_METHODS: Readonly<Record<string, string>> = {
  eth_fillTransaction:
    'not served: fill a transaction from `eth_getTransactionCount`, `eth_estimateGas` and the fee methods',
  eth_getBlockAccessList:
    'not served: block access lists (EIP-7928) are in no block this node imports, so the store keeps none',
  eth_coinbase: 'not served: the node produces no blocks, so it has no coinbase',
  eth_sign: 'not served: the node holds no keys; sign on the client',
  eth_signTransaction: 'not served: the node holds no keys; sign on the client',
  eth_sendTransaction: 'not served: the node holds no keys; sign on the client and send with `eth_sendRawTransaction`',
};
