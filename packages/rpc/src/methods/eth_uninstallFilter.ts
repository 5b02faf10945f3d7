import type { MethodDef } from '../method.js';
import { decodeFilterId, keyFiltersOf } from './filter-id.js';

/** true when the key had that filter (now removed), false otherwise (geth: never an error). */
export const eth_uninstallFilter: MethodDef<string, boolean> = {
  // Infura's default price (its table lists eth_newFilter at 80).
  cost: 80,
  params: 'filter id',
  decode: decodeFilterId,
  handle: async (ctx, id) => keyFiltersOf(ctx)?.uninstall(id) ?? false,
};
