// A recorded row whose frames end with an error text an earlier release wrote in fewer words than
// geth's (a bare `invalid opcode` or `stack underflow`, ethereumjs's `invalid JUMP at …`) is not
// replayed: the caller re-executes the transaction, which words the halt as geth does. A row with
// geth's texts, or with any other error, is replayed as recorded.
import { ByteWriter, encodeBlockFrames, encodeTx } from '../src/trace/record/codec.js';
import { replayRecorded } from '../src/trace/record/replay.js';
import type { FrameExit } from '../src/trace/hooks.js';

const BLOCK = new Uint8Array(32).fill(7);
const SENDER = new Uint8Array(20).fill(1);
const CALLEE = new Uint8Array(20).fill(2);

/** A block row of one transaction whose only frame ends with `error`. */
function row(error: string | undefined): Uint8Array {
  const w = new ByteWriter();
  encodeTx(
    w,
    {
      creation: false,
      gasLimit: 100_000n,
      gasUsed: 100_000n,
      logsBefore: 0,
      events: [
        {
          kind: 'enter',
          f: { depth: 0, type: 'CALL', from: SENDER, to: CALLEE, input: new Uint8Array(), gas: 79_000n, value: 0n },
          precompile: false,
        },
        {
          kind: 'exit',
          f: { depth: 0, output: new Uint8Array(), gasUsed: 79_000n, error, reverted: error !== undefined },
        },
      ],
    },
    new Uint8Array(),
    SENDER,
  );
  return encodeBlockFrames(BLOCK, [w.done()])[0] as Uint8Array;
}

async function replay(error: string | undefined): Promise<{ fed: boolean; exits: (string | undefined)[] }> {
  const exits: (string | undefined)[] = [];
  const fed = await replayRecorded(
    row(error),
    {
      blockHash: BLOCK,
      blockNumber: 1n,
      coinbase: new Uint8Array(20),
      index: 0,
      sender: SENDER,
      input: new Uint8Array(),
    },
    { onExit: (f: FrameExit) => void exits.push(f.error), result: () => null },
  );
  return { fed, exits };
}

test('frames recorded with the earlier, shorter halt texts are re-executed, not replayed', async () => {
  for (const stale of ['invalid opcode', 'stack underflow', 'invalid JUMP at 0xabcd/0x02:2'])
    expect([stale, await replay(stale)]).toEqual([stale, { fed: false, exits: [] }]);
});

test('frames with geth’s texts, other errors or none are replayed as recorded', async () => {
  for (const error of [
    'invalid opcode: INVALID',
    'invalid opcode: opcode 0xc not defined',
    'stack underflow (0 <=> 2)',
    'invalid jump destination',
    'out of gas',
    'execution reverted',
    undefined,
  ])
    expect(await replay(error)).toEqual({ fed: true, exits: [error] });
});
