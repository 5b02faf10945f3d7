import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

/**
 * false: every block up to the head is served (a follower's head only moves once a block is
 * durable, and nothing below it is missing), so there is no range still being synced.
 */
export const eth_syncing: MethodDef<void, false> = {
  cost: 5,
  params: 'none',
  decode: noParams,
  handle: async () => false,
};
