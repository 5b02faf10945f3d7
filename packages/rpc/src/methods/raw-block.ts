// Block resolution shared by geth's debug_getRaw* methods (internal/ethapi DebugAPI): a hash is
// taken as given; a number or tag names the canonical block, and one past the head is no error
// but an empty answer (geth's BlockByNumberOrHash returns no block and no error).
import type { Bytes } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import type { BlockSelector } from '../params.js';

/** The block `sel` names: its hash (`given`: the caller gave the hash), or undefined past the head. */
export async function rawBlockHash(
  ctx: HandlerContext,
  sel: BlockSelector,
): Promise<{ hash: Bytes; given: boolean } | undefined> {
  if (sel.kind === 'hash') return { hash: sel.hash, given: true };
  const number = sel.kind === 'number' ? sel.number : await resolveBlockNumber(ctx, sel);
  const hash = await ctx.store.canonicalHash(number);
  return hash === undefined ? undefined : { hash, given: false };
}

/** A hash as geth's "%d" prints it in these methods' errors: its bytes in decimal, "[1 2 ...]". */
export function goDecimalHash(hash: Bytes): string {
  return `[${Array.from(hash).join(' ')}]`;
}
