import { headFeeMethod } from './head-fee.js';

/** geth: the blob base fee of the head block (null before Cancun). */
export const eth_blobBaseFee = headFeeMethod(300, (forks, head) => forks.blobGasPrice(head));
