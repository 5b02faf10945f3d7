// eth_simulateV1 of this node against anvil's on the same followed chain: the members where anvil
// follows geth must be equal; where it deviates (named below), this node's answer is checked by
// geth's rule instead.
type Json = Record<string, unknown>;

const ZERO_HASH = `0x${'00'.repeat(32)}`;

/**
 * Members of a simulated block that anvil 1.7.1 answers as geth does (with `number`, `time` and
 * `baseFeePerGas` given in the block overrides). Not compared, anvil deviating from geth:
 * - `parentHash` and `stateRoot`: zero on anvil; geth links the blocks and computes the root;
 * - the simulated transactions: anvil builds them with other fields, so their hashes (and the
 *   `transactionsRoot`, the block `hash`, the logs' `transactionHash` and `blockHash`) differ;
 *   `receiptsRoot`: anvil's is its `transactionsRoot`;
 * - the Cancun members (`withdrawals`, `withdrawalsRoot`, `blobGasUsed`, `excessBlobGas`,
 *   `parentBeaconBlockRoot`) and `size`: absent on anvil;
 * - per call, `maxUsedGas` (geth 1.16): absent on anvil; a revert's shape (gethCall);
 * - with `traceTransfers`, anvil's `logsBloom` also covers the ERC-7528 transfer logs; geth's
 *   covers the calls' own logs only.
 */
const SAME_MEMBERS = [
  'number',
  'timestamp',
  'gasLimit',
  'gasUsed',
  'miner',
  'baseFeePerGas',
  'difficulty',
  'extraData',
  'mixHash',
  'nonce',
  'sha3Uncles',
  'uncles',
];

const pick = (o: Json, keys: readonly string[]): Json => Object.fromEntries(keys.map((k) => [k, o[k]]));

/**
 * anvil's result of a call as geth answers it: anvil reports a revert as error -3200 `execution
 * failed` with the revert data as `returnData`; geth as error 3 `execution reverted[: reason]`
 * with the revert data as the error's `data` and an empty `returnData`.
 */
function gethCall(a: Json): Json {
  if ((a.error as Json | undefined)?.code !== -3200) return a;
  return {
    ...a,
    returnData: '0x',
    error: { code: 3, message: expect.stringMatching(/^execution reverted/), data: a.returnData },
  };
}

/** A call's result without what anvil cannot match: maxUsedGas and the hashes of its logs. */
function comparableCall(c: Json): Json {
  const { maxUsedGas: _m, logs, ...rest } = c;
  const stripped = (logs as Json[]).map(({ transactionHash: _t, blockHash: _b, ...l }) => l);
  return { ...rest, logs: stripped };
}

/**
 * `mine` (this node's blocks) against `theirs` (anvil's) for a simulation on top of the block
 * `baseHash`; `traceTransfers` as requested.
 */
export function expectSimulatedAlike(mine: Json[], theirs: Json[], baseHash: string, traceTransfers: boolean): void {
  expect(mine.length).toBe(theirs.length);
  let parent = baseHash;
  for (const [i, o] of mine.entries()) {
    const a = theirs[i] as Json;
    const keys = traceTransfers ? SAME_MEMBERS : [...SAME_MEMBERS, 'logsBloom'];
    expect([i, pick(o, keys)]).toEqual([i, pick(a, keys)]);
    expect((o.transactions as unknown[]).length).toBe((a.transactions as unknown[]).length);
    expect((o.calls as Json[]).map(comparableCall)).toEqual((a.calls as Json[]).map(gethCall).map(comparableCall));
    // geth's rules where anvil deviates.
    expect([o.parentHash, a.parentHash]).toEqual([parent, ZERO_HASH]);
    expect(o.stateRoot).not.toBe(ZERO_HASH);
    expect(o).toMatchObject({ withdrawals: [], blobGasUsed: '0x0', parentBeaconBlockRoot: ZERO_HASH });
    for (const [j, c] of (o.calls as Json[]).entries()) {
      expect(BigInt(c.maxUsedGas as string)).toBeGreaterThanOrEqual(BigInt(c.gasUsed as string));
      for (const l of c.logs as Json[])
        expect([l.blockHash, l.transactionHash]).toEqual([o.hash, (o.transactions as string[])[j]]);
    }
    parent = o.hash as string;
  }
}
