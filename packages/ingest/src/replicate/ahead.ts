// Fetching ahead by ranges: blocks [from, target] in order from a source that serves ranges
// (ReplicaSource.range), with up to `depth` range requests in flight while the caller verifies
// and writes the blocks already here. An answer cut short by the upstream's caps is completed
// first, before the requests queued behind it are taken.
import type { ReplicaBlock } from './block.js';

export interface AheadOptions {
  /** Blocks one request asks for. */
  span: number;
  /** Requests in flight at most. */
  depth: number;
  /**
   * The first request asks for one block and each next one for twice as many, up to `span`: the
   * caller has a block to verify and write as soon as the upstream has answered one, instead of
   * idling while it answers `span` (on a mainnet-shaped chain a primary took ~5 s over its first
   * 32 blocks, all of it the replica's wait).
   */
  ramp?: boolean;
}

interface Pending {
  from: bigint;
  to: bigint;
  blocks: Promise<ReplicaBlock[]>;
}

/**
 * Blocks `from`..`target` in order; ends early (after yielding undefined) when the upstream has
 * none of a range it was asked for (a reorg to a shorter chain). A request that fails fails the
 * iteration at its place; the requests queued behind it are dropped.
 */
export async function* rangesAhead(
  fetchRange: (from: bigint, to: bigint) => Promise<ReplicaBlock[]>,
  from: bigint,
  target: bigint,
  opts: AheadOptions,
): AsyncGenerator<ReplicaBlock | undefined> {
  const queue: Pending[] = [];
  const ask = (a: bigint, b: bigint): Pending => {
    const blocks = fetchRange(a, b);
    blocks.catch(() => undefined); // awaited in turn; one dropped behind a failure is no unhandled rejection
    return { from: a, to: b, blocks };
  };
  let next = from;
  let span = opts.ramp === true ? 1 : opts.span;
  const fill = (): void => {
    while (queue.length < opts.depth && next <= target) {
      const to = next + BigInt(span) - 1n < target ? next + BigInt(span) - 1n : target;
      span = Math.min(opts.span, span * 2);
      queue.push(ask(next, to));
      next = to + 1n;
    }
  };
  fill();
  for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
    const blocks = await p.blocks;
    if (blocks.length === 0) {
      yield undefined;
      return;
    }
    const rest = p.from + BigInt(blocks.length);
    if (rest <= p.to) queue.unshift(ask(rest, p.to)); // cut short: the rest before anything behind it
    fill();
    for (const b of blocks) yield b;
  }
}
