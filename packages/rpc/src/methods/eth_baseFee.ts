import { headFeeMethod } from './head-fee.js';

/**
 * execution-apis: the base fee of the block after the head, by EIP-1559 from the head's gas used
 * and base fee (null while the next block is before London). Not in Infura's table: one header
 * read, priced like eth_gasPrice (80).
 */
export const eth_baseFee = headFeeMethod(80, (forks, head) => forks.nextBaseFee(head));
