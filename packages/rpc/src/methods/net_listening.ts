import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

/** true: the node is answering this very call. */
export const net_listening: MethodDef<void, boolean> = {
  cost: 5,
  params: 'none',
  decode: noParams,
  handle: async () => true,
};
