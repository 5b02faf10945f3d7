import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

/** The node holds no keys: no accounts (geth without a keystore, and Infura, answer the same). */
export const eth_accounts: MethodDef<void, Hex[]> = {
  cost: 80,
  params: 'none',
  decode: noParams,
  handle: async () => [],
};
