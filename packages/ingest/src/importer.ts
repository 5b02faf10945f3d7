// The import loop: genesis -> stream chain.rlp -> per block decode, execute, verify, stage ->
// flush groups of blocks as single atomic batches. Resumes from the store's head.
import { join } from 'node:path';
import { stat } from 'node:fs/promises';
import { RLP } from '@ethereumjs/rlp';
import { createBlockFromBytesArray, genTransactionsTrieRoot, genWithdrawalsTrieRoot } from '@ethereumjs/block';
import type { Block, BlockBytes } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { bytesToBigInt } from '@chainnode/core';
import { StoreWriter } from '@chainnode/store';
import type { BlockInput, StoredReceipt } from '@chainnode/store';
import { BlockVerificationError, ChainMismatchError, ChainSourceError } from './errors.js';
import { buildGenesis, commonFromGenesis, readGenesisJson } from './genesis.js';
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
  to?: bigint;
  onProgress?: (p: ImportProgress) => void;
  /** Flush a group after this many blocks (default 256), staged bytes (default 64 MiB) or ms (default 2000). */
  groupBlocks?: number;
  groupBytes?: number;
  groupMs?: number;
}

export interface ImportSummary {
  head: { number: bigint; hash: Uint8Array };
  startNumber: bigint;
  blocks: number;
  txs: number;
  logs: number;
  elapsedMs: number;
  /** True when genesis was written by this run. */
  createdGenesis: boolean;
}

const hex = (b: Uint8Array): string => bytesToHex(b);

function check(number: bigint, field: string, expected: Uint8Array | bigint, computed: Uint8Array | bigint): void {
  const same = typeof expected === 'bigint' ? expected === computed : equalsBytes(expected, computed as Uint8Array);
  if (!same) {
    const fmt = (v: Uint8Array | bigint) => (typeof v === 'bigint' ? v.toString() : hex(v));
    throw new BlockVerificationError(number, field, fmt(expected), fmt(computed));
  }
}

/** BLOCKHASH source for the EVM: recent hashes in memory, older ones from the store. */
class HashSource {
  private readonly recent = new Map<bigint, Uint8Array>();
  constructor(private readonly writer: StoreWriter) {}
  remember(n: bigint, hash: Uint8Array): void {
    this.recent.set(n, hash);
    this.recent.delete(n - 300n);
  }
  asBlockchain() {
    return {
      getBlock: async (n: number) => {
        const num = BigInt(n);
        const hash = this.recent.get(num) ?? (await this.writer.canonicalHash(num)) ?? new Uint8Array(32);
        return { hash: () => hash };
      },
      putBlock: async () => {},
      shallowCopy() {
        return this;
      },
    };
  }
}

async function verifyStatic(block: Block, values: BlockBytes): Promise<void> {
  const h = block.header;
  const n = h.number;
  check(n, 'transactionsRoot', h.transactionsTrie, await genTransactionsTrieRoot(block.transactions));
  const uncles = values[2] as unknown as Uint8Array[][];
  check(n, 'uncleHash (sha3Uncles)', h.uncleHash, keccak256(RLP.encode(uncles)));
  if (h.withdrawalsRoot !== undefined) {
    check(n, 'withdrawalsRoot', h.withdrawalsRoot, await genWithdrawalsTrieRoot(block.withdrawals ?? []));
  }
}

function receiptsOf(result: Awaited<ReturnType<typeof runBlock>>, block: Block): StoredReceipt[] {
  return result.receipts.map((r, i) => ({
    type: block.transactions[i]?.type ?? 0,
    statusOrState: 'stateRoot' in r ? r.stateRoot : Uint8Array.of(r.status),
    cumulativeGasUsed: r.cumulativeBlockGasUsed,
  }));
}

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
  const common = commonFromGenesis(genesisJson);
  const writer = await StoreWriter.open(opts.datadir);
  try {
    return await run(opts, writer, genesisJson, common, chainPath, bytesTotal, t0);
  } finally {
    await writer.close();
  }
}

async function run(
  opts: ImportOptions,
  writer: StoreWriter,
  genesisJson: Awaited<ReturnType<typeof readGenesisJson>>,
  common: Common,
  chainPath: string,
  bytesTotal: number,
  t0: number,
): Promise<ImportSummary> {
  // Node cache in the MPT and account/storage/code caches in the state manager: reads of hot
  // state stay off LevelDB (writes still reach the trie db, hence the store, every block).
  const trie = new MerklePatriciaTrie({ db: writer.trieDb, useKeyHashing: true, valueEncoding: 'view', common, cacheSize: 200_000 });
  const sm = new MerkleStateManager({ trie, common, caches: new Caches() });
  const genesis = await buildGenesis(genesisJson, common, sm);
  const stored = writer.storedGenesisHash();
  let createdGenesis = false;
  if (stored === undefined) {
    await writer.writeGenesis({
      chainConfig: genesisJson.config,
      block: {
        number: 0n,
        hash: genesis.hash(),
        headerRlp: genesis.header.serialize(),
        body: { size: genesis.serialize().length, transactions: [], uncles: [], ...(genesis.withdrawals ? { withdrawals: [] } : {}) },
        totalDifficulty: genesis.header.difficulty,
        senders: [],
        txHashes: [],
        receipts: [],
        logs: [],
        logsBloom: genesis.header.logsBloom,
      },
    });
    createdGenesis = true;
  } else {
    writer.trieDb.rejectBlock(); // genesis state already stored
    if (!equalsBytes(stored, genesis.hash())) {
      throw new ChainMismatchError(
        `datadir ${opts.datadir} holds a chain with genesis ${hex(stored)}, but ${join(opts.from, 'genesis.json')} has genesis ${hex(genesis.hash())}; use another --datadir`,
      );
    }
  }
  const durable = writer.durableHead();
  if (durable === undefined) throw new Error('store has no head after genesis');
  const startNumber = durable.number;
  let prevHash = durable.hash;
  let prevNumber = durable.number;
  const prevHeaderRlp = await writer.headerRlp(prevHash);
  const prevTd = await writer.totalDifficulty(prevHash);
  if (prevHeaderRlp === undefined || prevTd === undefined) throw new Error(`head block ${prevNumber} rows missing`);
  let td = prevTd;
  const headStateRoot = (RLP.decode(prevHeaderRlp) as Uint8Array[])[3] as Uint8Array;
  await sm.setStateRoot(headStateRoot);

  const hashes = new HashSource(writer);
  const vm: VM = await createVM({ common, stateManager: sm, blockchain: hashes.asBlockchain() as never, setHardfork: true });

  const groupBlocks = opts.groupBlocks ?? 256;
  const groupBytes = opts.groupBytes ?? 64 * 1024 * 1024;
  const groupMs = opts.groupMs ?? 2000;
  let lastFlush = Date.now();
  let totals = { blocks: 0, txs: 0, logs: 0 };
  let bytesRead = 0;
  let firstBlockSeen = false;
  const progress = () =>
    opts.onProgress?.({ number: prevNumber, startNumber, ...totals, elapsedMs: Date.now() - t0, bytesRead, bytesTotal });
  const flush = async () => {
    const s = await writer.flush();
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
        if (number === 1n && !equalsBytes(parent, genesis.hash())) {
          throw new ChainMismatchError(
            `genesis.json builds genesis ${hex(genesis.hash())}, but block 1 of chain.rlp has parent ${hex(parent)}`,
          );
        }
      }
      if (opts.to !== undefined && number > opts.to) break;
      if (number <= prevNumber) {
        // Already imported: it must be the block we hold.
        const have = await writer.canonicalHash(number);
        const hash = keccak256(RLP.encode(headerValues));
        if (have === undefined || !equalsBytes(have, hash)) {
          throw new ChainMismatchError(
            `chain.rlp block ${number} is ${hex(hash)}, but datadir ${opts.datadir} holds ${have ? hex(have) : 'nothing'} at that height; use another --datadir`,
          );
        }
        continue;
      }
      if (number !== prevNumber + 1n) {
        throw new ChainSourceError(`chain.rlp: expected block ${prevNumber + 1n} next, found block ${number}`);
      }
      let block: Block;
      try {
        block = createBlockFromBytesArray(values, { common, setHardfork: true });
      } catch (err) {
        throw new BlockVerificationError(number, 'encoding', 'a decodable block', (err as Error).message);
      }
      check(number, 'parentHash', prevHash, block.header.parentHash);
      await verifyStatic(block, values);
      let result;
      try {
        result = await runBlock(vm, { block, generate: true, skipBlockValidation: true, skipHeaderValidation: true, setHardfork: true });
      } catch (err) {
        writer.trieDb.rejectBlock();
        throw new BlockVerificationError(number, 'execution', 'a valid block', (err as Error).message);
      }
      try {
        const h = block.header;
        check(number, 'stateRoot', h.stateRoot, result.stateRoot);
        check(number, 'receiptsRoot', h.receiptTrie, result.receiptsRoot);
        check(number, 'logsBloom', h.logsBloom, result.logsBloom);
        check(number, 'gasUsed', h.gasUsed, result.gasUsed);
        if (h.requestsHash !== undefined) {
          if (result.requestsHash === undefined) throw new BlockVerificationError(number, 'requestsHash', hex(h.requestsHash), 'none');
          check(number, 'requestsHash', h.requestsHash, result.requestsHash);
        }
      } catch (err) {
        writer.trieDb.rejectBlock();
        throw err;
      }
      const hash = block.hash();
      td += block.header.difficulty;
      const input: BlockInput = {
        number,
        hash,
        headerRlp: RLP.encode(headerValues),
        body: {
          size: raw.bytes.length,
          transactions: block.transactions.map((tx) => tx.serialize()),
          uncles: (values[2] as unknown as Uint8Array[][]).map((u) => RLP.encode(u)),
          ...(values[3] !== undefined ? { withdrawals: values[3] as unknown as Uint8Array[][] } : {}),
        },
        totalDifficulty: td,
        senders: block.transactions.map((tx) => tx.getSenderAddress().bytes),
        txHashes: block.transactions.map((tx) => tx.hash()),
        receipts: receiptsOf(result, block),
        logs: result.receipts.map((r) => r.logs.map(([address, topics, data]) => ({ address, topics, data }))),
        logsBloom: result.logsBloom,
      };
      writer.addBlock(input);
      hashes.remember(number, hash);
      prevHash = hash;
      prevNumber = number;
      if (writer.stagedBlocks() >= groupBlocks || writer.stagedBytes() >= groupBytes || Date.now() - lastFlush >= groupMs) {
        await flush();
      }
    }
  } finally {
    // Whatever was verified before a failure (or the end) is written.
    await flush();
  }
  const head = writer.durableHead();
  if (head === undefined) throw new Error('no head after import');
  return { head, startNumber, ...totals, elapsedMs: Date.now() - t0, createdGenesis };
}
