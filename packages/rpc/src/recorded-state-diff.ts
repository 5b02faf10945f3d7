// A block's whole state change (chainnode_getStateDiff, chainnode_getBlockRange) read from the
// store's state history instead of a diff of two state tries. The keys the block changed are
// named by its recorded state changes (what its transactions changed, recorded at import) and by
// the writes a block makes outside its transactions: the EIP-4788 beacon roots and EIP-2935 block
// hashes system writes, the EIP-7002/7251 request queues' counters, the miners' rewards (the
// block's and its uncles'), withdrawals. The store reads their rows at the block and answers only
// when they are all of the block's changes (ChainStore.historyStateDiff). Anything else the block
// changed (the DAO fork's irregular change, a request dequeued, the slots an account's deletion
// cleared) leaves the answer to the trie diff: the same answer, slower.
import { bigIntToFixed } from '@chainnode/core';
import type { BlockTouches, HeaderRecord, StateDiffLimits, StateDiffRecord, TouchedAccount } from '@chainnode/core';
import { loadExec } from './call.js';
import type { HandlerContext } from './context.js';

const hexBytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));
const BEACON_ROOTS = hexBytes('000f3df6d732807ef1319fb7b8bb8522d0beac02');
const HISTORY_STORAGE = hexBytes('0000f90827f1c53a10cb7a02335b175320002935');
const WITHDRAWAL_REQUESTS = hexBytes('00000961ef480eb55e80d19ad83579a64c007002');
const CONSOLIDATION_REQUESTS = hexBytes('0000bbddc7ce488642fb579f8b00f3a590007251');
const RING = 8191n;
/** The empty trie's root: a block whose transactions (or withdrawals) root is this has none. */
const EMPTY_TRIE = '56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
/** keccak256 of the empty list: a block whose uncles hash is this has no uncles. */
const EMPTY_UNCLES = '1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347';

/** Storage slot `n` as its 32-byte key. */
const slot = (n: bigint): Uint8Array => bigIntToFixed(n, 32);

/**
 * The block's change set from its state history rows (see the file comment); undefined when the
 * store cannot answer so: the caller diffs the tries.
 */
export async function recordedStateDiff(
  ctx: HandlerContext,
  header: HeaderRecord,
  limits: StateDiffLimits,
): Promise<StateDiffRecord | undefined> {
  if (ctx.store.historyStateDiff === undefined) return undefined;
  // A block without transactions has no rows: its touches are the block-level ones alone. One
  // with transactions and no rows (recording off, a replicated or joined datadir) cannot be named.
  const rows = await ctx.store.txStateDiffs?.(header.hash);
  if (rows === undefined && Buffer.from(header.transactionsRoot).toString('hex') !== EMPTY_TRIE) return undefined;
  // The row codec is exec's: loaded with it on the first such answer, as eth_call loads it (a
  // serving thread or offload worker that never answers either never loads the EVM).
  const recorded = rows === undefined ? { accounts: [] } : (await loadExec()).recordedTouches(rows, header.hash);
  if (recorded === undefined) return undefined;
  const touches = await withBlockLevel(ctx, header, recorded);
  return ctx.store.historyStateDiff({ number: header.number, hash: header.hash }, touches, limits);
}

/**
 * `recorded` and the keys a block may write outside its transactions. Over-naming costs a point
 * read per key (a key the block did not change has no row at it); the system contracts' keys are
 * named whether or not the block's fork has them.
 */
async function withBlockLevel(
  ctx: HandlerContext,
  header: HeaderRecord,
  recorded: BlockTouches,
): Promise<BlockTouches> {
  const extra: TouchedAccount[] = [];
  const beaconSlot = header.timestamp % RING;
  extra.push({ address: BEACON_ROOTS, slots: [slot(beaconSlot), slot(beaconSlot + RING)], codeHashBefore: undefined });
  if (header.number > 0n)
    extra.push({ address: HISTORY_STORAGE, slots: [slot((header.number - 1n) % RING)], codeHashBefore: undefined });
  // The request queues' excess, count, head and tail (EIP-7002, EIP-7251).
  const counters = [slot(0n), slot(1n), slot(2n), slot(3n)];
  extra.push({ address: WITHDRAWAL_REQUESTS, slots: counters, codeHashBefore: undefined });
  extra.push({ address: CONSOLIDATION_REQUESTS, slots: counters, codeHashBefore: undefined });
  extra.push({ address: header.coinbase, slots: [], codeHashBefore: undefined });
  // Proof of work: the uncles' miners' rewards (the empty list's hash: none).
  if (Buffer.from(header.uncleHash).toString('hex') !== EMPTY_UNCLES) {
    const block = await ctx.store.block(header.hash);
    for (let i = 0; i < (block?.uncleHashes.length ?? 0); i++) {
      const uncle = await ctx.store.uncle(header.hash, i);
      if (uncle !== undefined) extra.push({ address: uncle.header.coinbase, slots: [], codeHashBefore: undefined });
    }
  }
  const root = header.withdrawalsRoot;
  if (root !== undefined && Buffer.from(root).toString('hex') !== EMPTY_TRIE) {
    const block = await ctx.store.block(header.hash);
    for (const w of block?.withdrawals ?? []) extra.push({ address: w.address, slots: [], codeHashBefore: undefined });
  }
  return { accounts: merge(recorded.accounts, extra) };
}

/** The accounts of both lists, each once: the recorded entry's code hash before (known) kept, the slots joined. */
function merge(recorded: TouchedAccount[], extra: TouchedAccount[]): TouchedAccount[] {
  const byAddress = new Map<string, TouchedAccount>();
  for (const a of recorded) byAddress.set(Buffer.from(a.address).toString('latin1'), a);
  for (const e of extra) {
    const id = Buffer.from(e.address).toString('latin1');
    const known = byAddress.get(id);
    if (known === undefined) byAddress.set(id, { address: e.address, slots: [...e.slots], codeHashBefore: undefined });
    else if (e.slots.length > 0)
      byAddress.set(id, {
        address: known.address,
        slots: [...known.slots, ...e.slots],
        codeHashBefore: known.codeHashBefore,
      });
  }
  return [...byAddress.values()];
}
