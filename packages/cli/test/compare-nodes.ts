// Two chainnode nodes compared method by method, reply text by reply text (replicas of a primary,
// followers and replicated stores against the node they came from).
import { batchReplies, result } from './anvil-upstream.js';

type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;

/** Reply texts of a batch, in call order (chunks of 500; each call's id is its index). */
export async function rawBatch(url: string, calls: [string, unknown[]][]): Promise<string[]> {
  const replies = await batchReplies(url, calls, 500);
  return replies.map((r) => (r === undefined ? 'missing' : JSON.stringify(r)));
}

/** The fixture chain's FixtureToken (fixtures/README.md); slot 2: totalSupply. */
const FIXTURE_TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';

/**
 * The spec's eight methods at every block (or a sample: `every`), byte for byte, on node `a` and each node of `b`: every
 * block by number (full) and hash, uncles, every transaction, logs per block and per 100-block
 * range, and storage and proofs of `account` at a sample of blocks. `a` answers once for all of
 * `b`. Returns the counts compared. Replies are texts: equal texts pass without building an
 * expectation (thousands per call), a differing one fails through expect with its block or method.
 */
export async function compareNodes(
  a: string,
  b: string | readonly string[],
  account: { address: string; slots: string[] } = { address: FIXTURE_TOKEN, slots: ['0x2', `0x${'00'.repeat(31)}07`] },
  /** The first block both hold (a node that joined its chain there holds none below it). */
  from = 0,
  /**
   * Every `every`-th block from `from`, and the last 12: for stores already proven digest-equal,
   * where the comparison is of the serving, not of each block's rows.
   */
  every = 1,
): Promise<{ blocks: number; txs: number }> {
  const others = typeof b === 'string' ? [b] : b;
  const head = Number(await result<string>(a, 'eth_blockNumber', []));
  for (const url of others) expect(await result<string>(url, 'eth_blockNumber', [])).toBe(hexN(head));
  const all = Array.from({ length: head + 1 - from }, (_, i) => from + i);
  const nums = all.filter((n) => (n - from) % every === 0 || n > head - 12);
  const blockCalls: [string, unknown[]][] = nums.map((n) => ['eth_getBlockByNumber', [hexN(n), true]]);
  const [ra, ...rbs] = await Promise.all([a, ...others].map((url) => rawBatch(url, blockCalls)));
  const hashes: string[] = [];
  const txs: string[] = [];
  nums.forEach((n, i) => {
    for (const rb of rbs) if (rb[i] !== ra?.[i]) expect([n, rb[i]]).toEqual([n, ra?.[i]]);
    const blk = (JSON.parse(ra?.[i] as string) as { result: Json }).result;
    hashes.push(blk.hash as string);
    for (const t of blk.transactions as Json[]) txs.push(t.hash as string);
  });
  const calls: [string, unknown[]][] = [
    ...hashes.map((h): [string, unknown[]] => ['eth_getBlockByHash', [h, false]]),
    ...hashes.map((h): [string, unknown[]] => ['eth_getUncleByBlockHashAndIndex', [h, '0x0']]),
    ...nums.map((n): [string, unknown[]] => ['eth_getUncleByBlockNumberAndIndex', [hexN(n), '0x1']]),
    ...txs.map((h): [string, unknown[]] => ['eth_getTransactionByHash', [h]]),
    ...hashes.filter((_, i) => i % 4 === 0).map((h): [string, unknown[]] => ['eth_getLogs', [{ blockHash: h }]]),
    ...all
      .filter((n) => n % 100 === 0)
      .map((n): [string, unknown[]] => [
        'eth_getLogs',
        [{ fromBlock: hexN(n), toBlock: hexN(Math.min(head, n + 99)) }],
      ]),
  ];
  const sample = all.filter((n) => n % 53 === 0 || n > head - 12);
  for (const n of sample) {
    for (const slot of account.slots) calls.push(['eth_getStorageAt', [account.address, slot, hexN(n)]]);
    calls.push(['eth_getProof', [account.address, account.slots, hexN(n)]]);
  }
  const [ca, ...cbs] = await Promise.all([a, ...others].map((url) => rawBatch(url, calls)));
  ca?.forEach((t, i) => {
    for (const cb of cbs) if (cb[i] !== t) expect([calls[i]?.[0], cb[i]]).toEqual([calls[i]?.[0], t]);
  });
  return { blocks: nums.length, txs: txs.length };
}
