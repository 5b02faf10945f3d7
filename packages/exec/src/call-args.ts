// What a call asks for (geth's TransactionArgs and BlockOverrides as this node honours them), shared
// by the executor's calls and the simulator's blocks.
import { bigIntToUnpaddedBytes } from '@ethereumjs/util';
import type { Bytes } from '@chainnode/core';

export interface CallArgs {
  from?: Bytes;
  to?: Bytes | null;
  gas?: bigint;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  maxFeePerBlobGas?: bigint;
  value?: bigint;
  input?: Bytes;
  nonce?: bigint;
  accessList?: { address: Bytes; storageKeys: Bytes[] }[];
  blobVersionedHashes?: Bytes[];
  authorizationList?: { chainId: bigint; address: Bytes; nonce: bigint; yParity: bigint; r: bigint; s: bigint }[];
}

/** geth's BlockOverrides (the fields this node honours). */
export interface BlockOverrides {
  number?: bigint;
  time?: bigint;
  gasLimit?: bigint;
  feeRecipient?: Bytes;
  prevRandao?: Bytes;
  baseFeePerGas?: bigint;
}

/** EIP-7702 authorizations as @ethereumjs/tx takes them: [chainId, address, nonce, yParity, r, s]. */
export function authorizationTuples(list: NonNullable<CallArgs['authorizationList']>): Uint8Array[][] {
  const u = bigIntToUnpaddedBytes;
  return list.map((x) => [u(x.chainId), x.address, u(x.nonce), u(x.yParity), u(x.r), u(x.s)]);
}
