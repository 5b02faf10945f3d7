// The file source: genesis.json + chain.rlp streamed into the one import pipeline (pipeline.ts),
// groups of blocks flushed as single atomic batches. Resumes from the store's head; a chain.rlp
// that diverges from the stored chain reorgs the store to it (the file is the authority).
import { join } from 'node:path';
import { stat } from 'node:fs/promises';
import { RLP } from '@ethereumjs/rlp';
import type { BlockBytes } from '@ethereumjs/block';
import type { GethGenesis } from '@ethereumjs/common';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/core';
import { bytesToBigInt } from '@chainnode/core';
import type { ChainCommit } from '@chainnode/core';
import type { StateTrieMode } from '@chainnode/store';
import { ChainMismatchError, ChainSourceError, ReorgTooDeepError } from './errors.js';
import { readGenesisJson } from './genesis.js';
import { ImportPipeline } from './pipeline.js';
import { readRlpBlocks } from './rlp-stream.js';

export interface ImportProgress {
  /** Number of the last block staged or written. */
  number: bigint;
  /** Head at the start of this run (resume point). */
  startNumber: bigint;
  blocks: number;
  txs: number;
  logs: number;
  elapsedMs: number;
  /** Bytes of chain.rlp consumed / total. */
  bytesRead: number;
  bytesTotal: number;
}

export interface ImportOptions {
  /** Directory holding genesis.json and chain.rlp. */
  from: string;
  datadir: string;
  /** Stop after this block (inclusive). */
  to?: bigint | undefined;
  onProgress?: (p: ImportProgress) => void;
  /** Flush a group after this many blocks (default 256), staged bytes (default 64 MiB) or ms (default 2000). */
  groupBlocks?: number;
  groupBytes?: number;
  groupMs?: number;
  /** The deepest reorg a diverging chain.rlp may cause (default 64). */
  reorgDepth?: bigint;
  /** Called after each durable batch with what it changed. */
  onCommit?: (commit: ChainCommit) => void;
  /** Notes for the operator (a trie window's pruning cycles). */
  log?: ((line: string) => void) | undefined;
  /** `--state-trie` (PipelineOptions.stateTrie). */
  stateTrie?: StateTrieMode;
  /** `--trace-frames` (PipelineOptions.traceFrames). */
  traceFrames?: boolean;
}

export interface ImportSummary {
  head: { number: bigint; hash: Uint8Array };
  startNumber: bigint;
  blocks: number;
  txs: number;
  logs: number;
  elapsedMs: number;
  /** Reorgs (the file diverging from the store) applied. */
  reorgs: number;
  /** True when genesis was written by this run. */
  createdGenesis: boolean;
}

const hex = (b: Uint8Array): string => bytesToHex(b);

export async function importChain(opts: ImportOptions): Promise<ImportSummary> {
  const t0 = Date.now();
  const genesisJson = await readGenesisJson(join(opts.from, 'genesis.json'));
  const chainPath = join(opts.from, 'chain.rlp');
  let bytesTotal: number;
  try {
    bytesTotal = (await stat(chainPath)).size;
  } catch (err) {
    throw new ChainSourceError(`cannot read ${chainPath}: ${(err as Error).message}`, { cause: err });
  }
  const pipeline = await openForFile(opts, genesisJson, join(opts.from, 'genesis.json'));
  try {
    return await run(opts, pipeline, chainPath, bytesTotal, t0);
  } finally {
    await pipeline.close();
  }
}

async function openForFile(opts: ImportOptions, json: GethGenesis, path: string): Promise<ImportPipeline> {
  try {
    return await ImportPipeline.open({
      datadir: opts.datadir,
      genesis: { json },
      log: opts.log,
      ...(opts.stateTrie !== undefined ? { stateTrie: opts.stateTrie } : {}),
      ...(opts.traceFrames !== undefined ? { traceFrames: opts.traceFrames } : {}),
    });
  } catch (err) {
    if (err instanceof ChainMismatchError)
      throw new ChainMismatchError(err.message.replace('the given genesis.json', path));
    throw err;
  }
}

async function run(
  opts: ImportOptions,
  pipeline: ImportPipeline,
  chainPath: string,
  bytesTotal: number,
  t0: number,
): Promise<ImportSummary> {
  const startNumber = pipeline.head().number;
  const genesisHash = pipeline.genesisHash;
  const reorgDepth = opts.reorgDepth ?? 64n;
  const groupBlocks = opts.groupBlocks ?? 256;
  const groupBytes = opts.groupBytes ?? 64 * 1024 * 1024;
  const groupMs = opts.groupMs ?? 2000;
  let lastFlush = Date.now();
  let totals = { blocks: 0, txs: 0, logs: 0 };
  let bytesRead = 0;
  let firstBlockSeen = false;
  let reorgs = 0;
  const progress = () =>
    opts.onProgress?.({
      number: pipeline.head().number,
      startNumber,
      ...totals,
      elapsedMs: Date.now() - t0,
      bytesRead,
      bytesTotal,
    });
  /** `behind`: returns once LevelDB has the group (ImportPipeline.flushBehind), the next blocks run meanwhile. */
  const flush = async (behind = false) => {
    const { stats: s, commits } = await (behind ? pipeline.flushBehind() : pipeline.flush());
    for (const c of commits) opts.onCommit?.(c);
    totals = { blocks: totals.blocks + s.blocks, txs: totals.txs + s.txs, logs: totals.logs + s.logs };
    lastFlush = Date.now();
    progress();
  };

  try {
    for await (const raw of readRlpBlocks(chainPath)) {
      bytesRead = raw.offset + raw.bytes.length;
      const values = RLP.decode(raw.bytes) as unknown as BlockBytes;
      const headerValues = values[0] as unknown as Uint8Array[];
      const number = bytesToBigInt(headerValues[8] as Uint8Array);
      if (!firstBlockSeen) {
        firstBlockSeen = true;
        const parent = headerValues[0] as Uint8Array;
        if (number === 1n && !equalsBytes(parent, genesisHash)) {
          throw new ChainMismatchError(
            `genesis.json builds genesis ${hex(genesisHash)}, but block 1 of chain.rlp has parent ${hex(parent)}`,
          );
        }
      }
      if (opts.to !== undefined && number > opts.to) break;
      const head = pipeline.head();
      if (number <= head.number) {
        // Already imported: it must be the block we hold, else the file (the authority) reorgs
        // the store from there. Read once every group has landed.
        if (pipeline.flying()) await flush();
        const have = await pipeline.canonicalHash(number);
        const hash = keccak256(RLP.encode(headerValues));
        if (have !== undefined && equalsBytes(have, hash)) continue;
        if (number === 0n)
          throw new ChainMismatchError(
            `chain.rlp block 0 is ${hex(hash)}, but datadir ${opts.datadir} holds genesis ${hex(genesisHash)}`,
          );
        if (head.number - (number - 1n) > reorgDepth) {
          throw new ReorgTooDeepError(
            `chain.rlp leaves the stored chain at block ${number} (stored head ${head.number}): a reorg of ${head.number - number + 1n} blocks is deeper than --reorg-depth ${reorgDepth}`,
          );
        }
        await pipeline.rewind(number - 1n);
        reorgs++;
      } else if (number !== head.number + 1n) {
        throw new ChainSourceError(`chain.rlp: expected block ${head.number + 1n} next, found block ${number}`);
      }
      await pipeline.append(raw.bytes, values);
      if (
        pipeline.stagedBlocks() >= groupBlocks ||
        pipeline.stagedBytes() >= groupBytes ||
        Date.now() - lastFlush >= groupMs
      ) {
        await flush(true);
      }
    }
  } finally {
    // Whatever was verified before a failure (or the end) is written.
    await flush();
  }
  const head = pipeline.durableHead();
  return {
    head: { number: head.number, hash: head.hash },
    startNumber,
    ...totals,
    reorgs,
    elapsedMs: Date.now() - t0,
    createdGenesis: pipeline.createdGenesis,
  };
}
