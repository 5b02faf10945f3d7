// The bench's own reading of a geth chain export (`chain.rlp`): block hashes, transaction hashes
// and raw transactions computed here from the bytes (keccak of the header RLP, keccak of each
// canonical transaction encoding), independently of the store and rpc packages, so that replies
// can be checked against it; and the replay of the same transactions into anvil, block by block
// (same senders, nonces, order, timestamps and base fees), which gives anvil a chain of the same
// shape: the same transactions, contracts, storage and logs at the same block numbers (block
// hashes differ: anvil writes its own headers).
import { readFileSync } from 'node:fs';
import { RLP } from '@ethereumjs/rlp';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { batchClient, spawnChild, waitRpc } from './children.js';
import type { Rpc } from './children.js';
import { keccak256 } from './synth.js';

export interface FixtureTx {
  hash: string;
  raw: string;
}

export interface FixtureBlock {
  number: number;
  hash: string;
  stateRoot: string;
  timestamp: number;
  /** 0 before London. */
  baseFee: bigint;
  txs: FixtureTx[];
}

const hex = (b: Uint8Array): string => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
const uint = (b: Uint8Array): bigint => (b.length === 0 ? 0n : BigInt(hex(b)));

/** Every block of `chain.rlp` (genesis excluded), in order. */
export function readChain(file: string): FixtureBlock[] {
  const raw = readFileSync(file);
  const out: FixtureBlock[] = [];
  let at = 0;
  while (at < raw.length) {
    const { data, remainder } = RLP.decode(raw.subarray(at), true) as unknown as {
      data: [Uint8Array[], (Uint8Array | Uint8Array[])[]];
      remainder: Uint8Array;
    };
    const end = raw.length - remainder.length;
    const [header, txs] = data;
    const headerRlp = RLP.encode(header);
    const txsRaw = txs.map((t) => (t instanceof Uint8Array ? t : RLP.encode(t)));
    out.push({
      number: Number(uint(header[8] as Uint8Array)),
      hash: hex(keccak256(headerRlp)),
      stateRoot: hex(header[3] as Uint8Array),
      timestamp: Number(uint(header[11] as Uint8Array)),
      baseFee: header.length > 15 ? uint(header[15] as Uint8Array) : 0n,
      txs: txsRaw.map((r) => ({ hash: hex(keccak256(r)), raw: hex(r) })),
    });
    at = end;
  }
  return out;
}

export { batchClient, type Rpc } from './children.js';

/**
 * Mines `blocks` into an anvil started with `--init <genesis.json> --no-mining --order fifo
 * --hardfork london`: per block, the next base fee (0 before London), the raw transactions in
 * chain order (fifo keeps it), then evm_mine at the block's timestamp. Checks every mined block's
 * transaction hashes against the export.
 */
export async function replayIntoAnvil(rpc: Rpc, blocks: FixtureBlock[]): Promise<void> {
  for (const b of blocks) {
    await rpc([['anvil_setNextBlockBaseFeePerGas', [`0x${b.baseFee.toString(16)}`]]]);
    // One request per transaction: anvil runs the members of a batch concurrently, so a batch
    // of a block's transactions reached its pool (and its fifo order) in another order.
    for (const t of b.txs) await rpc([['eth_sendRawTransaction', [t.raw]]]);
    await rpc([['evm_mine', [b.timestamp]]]);
    const mined = (await rpc([['eth_getBlockByNumber', [`0x${b.number.toString(16)}`, false]]]))[0] as {
      transactions: string[];
    } | null;
    const want = b.txs.map((t) => t.hash);
    if (mined === null || mined.transactions.join() !== want.join()) {
      throw new Error(
        `anvil replay: block ${b.number} holds ${mined?.transactions.length ?? 'no'} txs, the export ${want.length} (or another order)`,
      );
    }
  }
}

/**
 * anvil on a free-ish port from an export's genesis (`--init`, London rules, fifo order, no
 * mining), its evicted states under `cacheDir`, keeping the states of the last `history` blocks
 * when given, with `blocks` replayed into it (replayIntoAnvil): the peer of the benches that ask
 * both servers about one chain. `log` hears how long the replay took.
 */
export async function startReplayedAnvil(o: {
  root: string;
  genesisPath: string;
  cacheDir: string;
  history?: number | undefined;
  blocks: FixtureBlock[];
  log: (line: string) => void;
}): Promise<{ url: string; proc: ChildProcess }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const url = `http://127.0.0.1:${port}/`;
  const proc = spawnChild(
    join(o.root, 'node_modules', '.bin', 'anvil'),
    [
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--init',
      o.genesisPath,
      '--cache-path',
      o.cacheDir,
      '--no-mining',
      '--order',
      'fifo',
      '--hardfork',
      'london',
      '--silent',
      ...(o.history !== undefined ? ['--prune-history', String(o.history)] : []),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await waitRpc(url, proc);
  const t0 = Date.now();
  await replayIntoAnvil(batchClient(url), o.blocks);
  o.log(`anvil replayed ${o.blocks.length} blocks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { url, proc };
}
