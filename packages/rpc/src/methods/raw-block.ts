// Block resolution shared by geth's debug_getRaw* methods (internal/ethapi DebugAPI): a hash is
// taken as given; a number or tag names the canonical block, and one past the head is no error
// but an empty answer (geth's BlockByNumberOrHash returns no block and no error).
import { ServerError, toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockSelector } from '../params.js';
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

/** debug_getRawBlock and debug_getRawHeader: the stored RLP of the block `sel` names, or of its header. */
export function rawBlockMethod(
  what: 'block' | 'header',
  read: (ctx: HandlerContext, hash: Bytes) => Promise<Bytes | undefined>,
): MethodDef<BlockSelector, Hex> {
  return {
    cost: 80,
    params: 'block (number, tag, hash or EIP-1898 object)',
    decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockSelector(arg(0))),
    async handle(ctx, sel) {
      const at = await rawBlockHash(ctx, sel);
      if (at === undefined) return '0x'; // geth: a number past the head is an empty answer
      const raw = await read(ctx, at.hash);
      if (raw === undefined) throw new ServerError(`${what} #${goDecimalHash(at.hash)} not found`);
      return toData(raw);
    },
  };
}
