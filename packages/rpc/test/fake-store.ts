// A small hand-built ChainStore for unit tests: three blocks (0..2), one transaction of each
// type, one uncle, a few logs. Its logs() is a plain scan, so it doubles as the reference
// semantics the real store must match.
import { bigIntToFixed, bytesEqual, LimitExceededError } from '@chainnode/core';
import type {
  AccountRecord,
  ReceiptRecord,
  SyncStateReader,
  AccountProofRecord,
  BlockRecord,
  Bytes,
  ChainHead,
  ChainInfo,
  ChainStore,
  HeaderRecord,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogRecord,
  StateDiffLimits,
  StateDiffRecord,
  TxRecord,
  TxWithLocation,
  UncleRecord,
} from '@chainnode/core';

export function filled(byte: number, length: number): Bytes {
  return new Uint8Array(length).fill(byte);
}

export function header(number: bigint, extra: Partial<HeaderRecord> = {}): HeaderRecord {
  return {
    hash: filled(0xa0 + Number(number), 32),
    parentHash: number === 0n ? filled(0, 32) : filled(0xa0 + Number(number) - 1, 32),
    uncleHash: filled(0x1d, 32),
    coinbase: filled(0xc0, 20),
    stateRoot: filled(0x50 + Number(number), 32),
    transactionsRoot: filled(0x70, 32),
    receiptsRoot: filled(0x72, 32),
    logsBloom: filled(0, 256),
    difficulty: 131072n,
    number,
    gasLimit: 30_000_000n,
    gasUsed: 21_000n,
    timestamp: 1000n + number * 12n,
    extraData: new Uint8Array([0xab, 0xcd]),
    mixHash: filled(0x33, 32),
    nonce: filled(0, 8),
    ...extra,
  };
}

const FROM = filled(0xf1, 20);
const TO = filled(0x70, 20);

export const legacyTx: TxRecord = {
  type: 0,
  hash: filled(0x01, 32),
  from: FROM,
  nonce: 0n,
  gas: 21_000n,
  to: TO,
  value: 1n,
  input: new Uint8Array(),
  v: 27n,
  r: 1n,
  s: 2n,
  gasPrice: 10n,
};

export const eip155Tx: TxRecord = {
  ...legacyTx,
  hash: filled(0x02, 32),
  nonce: 1n,
  to: null,
  input: new Uint8Array([0x60, 0x00]),
  v: 2n * 1337n + 35n,
  chainId: 1337n,
};

export const dynamicTx: TxRecord = {
  type: 2,
  hash: filled(0x03, 32),
  from: FROM,
  nonce: 2n,
  gas: 50_000n,
  to: TO,
  value: 0n,
  input: new Uint8Array(),
  v: 1n,
  r: 3n,
  s: 4n,
  chainId: 1337n,
  maxPriorityFeePerGas: 2n,
  maxFeePerGas: 100n,
  accessList: [{ address: TO, storageKeys: [filled(0, 32)] }],
};

export const blobTx: TxRecord = {
  ...dynamicTx,
  type: 3,
  hash: filled(0x04, 32),
  nonce: 3n,
  v: 0n,
  maxFeePerGas: 7n,
  accessList: [],
  maxFeePerBlobGas: 9n,
  blobVersionedHashes: [filled(0x01, 32)],
};

export const setCodeTx: TxRecord = {
  ...dynamicTx,
  type: 4,
  hash: filled(0x05, 32),
  nonce: 4n,
  accessList: [],
  authorizationList: [{ chainId: 0n, address: TO, nonce: 7n, yParity: 1n, r: 5n, s: 6n }],
};

export const uncleHeader = header(1n, { hash: filled(0xee, 32), coinbase: filled(0xc1, 20) });

export const blocks: BlockRecord[] = [
  { header: header(0n), size: 500, totalDifficulty: 131072n, transactions: [], uncleHashes: [] },
  {
    header: header(1n),
    size: 700,
    totalDifficulty: 262144n,
    transactions: [legacyTx, eip155Tx],
    uncleHashes: [],
  },
  {
    header: header(2n, {
      baseFeePerGas: 5n,
      withdrawalsRoot: filled(0x77, 32),
      blobGasUsed: 131072n,
      excessBlobGas: 0n,
      parentBeaconBlockRoot: filled(0x88, 32),
      requestsHash: filled(0x99, 32),
    }),
    size: 900,
    totalDifficulty: 393216n,
    transactions: [dynamicTx, blobTx, setCodeTx],
    uncleHashes: [uncleHeader.hash],
    withdrawals: [{ index: 0n, validatorIndex: 5n, address: TO, amount: 32n }],
  },
];

const A = filled(0xaa, 20);
const B = filled(0xbb, 20);
const T0 = filled(0x10, 32);
const T1 = filled(0x11, 32);

function log(block: number, tx: number, logIndex: number, address: Bytes, topics: Bytes[]): LogRecord {
  const b = blocks[block]!;
  return {
    address,
    topics,
    data: new Uint8Array([logIndex]),
    blockNumber: b.header.number,
    blockHash: b.header.hash,
    blockTimestamp: b.header.timestamp,
    transactionHash: b.transactions[tx]!.hash,
    transactionIndex: tx,
    logIndex,
  };
}

export const logs: LogRecord[] = [
  log(1, 0, 0, A, [T0]),
  log(1, 1, 1, B, [T0, T1]),
  log(2, 0, 0, A, []),
  log(2, 2, 1, A, [T1, T0]),
];
export const addresses = { A, B };
export const topics = { T0, T1 };

/** Geth's filter semantics by plain scan. */
export function matches(q: LogQuery, l: LogRecord): boolean {
  if (l.blockNumber < q.fromBlock || l.blockNumber > q.toBlock) return false;
  if (q.addresses.length > 0 && !q.addresses.some((a) => bytesEqual(a, l.address))) return false;
  if (q.topics.length > l.topics.length) return false;
  return q.topics.every((alts, i) => alts === null || alts.some((t) => bytesEqual(t, l.topics[i]!)));
}

export interface FakeOptions {
  /** Make logs() take this long (checked against the deadline). */
  logsDelayMs?: number;
  /** Make logs() ignore the deadline entirely. */
  ignoreDeadline?: boolean;
  failWith?: Error;
}

export class FakeStore implements ChainStore {
  lastLogOptions: LogQueryOptions | undefined;
  constructor(readonly opts: FakeOptions = {}) {}

  info(): ChainInfo {
    return { chainId: 1337n, networkId: 1337n, genesisHash: blocks[0]!.header.hash };
  }
  async head(): Promise<ChainHead> {
    if (this.opts.failWith) throw this.opts.failWith;
    const h = blocks[blocks.length - 1]!.header;
    return { number: h.number, hash: h.hash };
  }
  async canonicalHash(number: bigint): Promise<Bytes | undefined> {
    return blocks.find((b) => b.header.number === number)?.header.hash;
  }
  async blockNumber(hash: Bytes): Promise<bigint | undefined> {
    return blocks.find((b) => bytesEqual(b.header.hash, hash))?.header.number;
  }
  async header(hash: Bytes): Promise<HeaderRecord | undefined> {
    return (await this.block(hash))?.header;
  }
  async block(hash: Bytes): Promise<BlockRecord | undefined> {
    return blocks.find((b) => bytesEqual(b.header.hash, hash));
  }
  async uncle(blockHash: Bytes, index: number): Promise<UncleRecord | undefined> {
    const b = await this.block(blockHash);
    if (b === undefined || index >= b.uncleHashes.length) return undefined;
    return { header: uncleHeader, size: 530 };
  }
  async transaction(hash: Bytes): Promise<TxWithLocation | undefined> {
    for (const b of blocks) {
      const i = b.transactions.findIndex((t) => bytesEqual(t.hash, hash));
      if (i >= 0) {
        return {
          tx: b.transactions[i]!,
          blockHash: b.header.hash,
          blockNumber: b.header.number,
          transactionIndex: i,
          blockTimestamp: b.header.timestamp,
          baseFeePerGas: b.header.baseFeePerGas,
        };
      }
    }
    return undefined;
  }
  async logs(q: LogQuery, o: LogQueryOptions): Promise<LogQueryResult> {
    this.lastLogOptions = o;
    if (this.opts.logsDelayMs !== undefined) {
      await new Promise((r) => setTimeout(r, this.opts.logsDelayMs).unref());
      if (!this.opts.ignoreDeadline && Date.now() > o.deadline) throw new LimitExceededError('store deadline');
    }
    const out: LogRecord[] = [];
    for (const l of logs) {
      if (!matches(q, l)) continue;
      if (out.length === o.limit) {
        // lastFittingBlock: the block before the first one that does not fit entirely.
        return { kind: 'too-many', lastFittingBlock: l.blockNumber - 1n };
      }
      out.push(l);
    }
    return { kind: 'ok', logs: out };
  }
  async storageAt(stateRoot: Bytes, _address: Bytes, slot: Bytes): Promise<Bytes> {
    // value = last byte of the slot, at state root of block 2 only; minimal-length bytes.
    if (!bytesEqual(stateRoot, blocks[2]!.header.stateRoot)) return new Uint8Array();
    return new Uint8Array([slot[31]!]);
  }
  async proof(stateRoot: Bytes, address: Bytes, slots: Bytes[]): Promise<AccountProofRecord> {
    return {
      address,
      nonce: 1n,
      balance: 10n ** 18n,
      codeHash: filled(0xcc, 32),
      storageHash: stateRoot,
      accountProof: [new Uint8Array([0xc0])],
      storageProof: slots.map((key) => ({ key, value: BigInt(key[31]!), proof: [] })),
    };
  }
  async receipts(blockHash: Bytes): Promise<ReceiptRecord[] | undefined> {
    const b = await this.block(blockHash);
    if (b === undefined) return undefined;
    return b.transactions.map((_, i) => ({
      type: b.transactions[i]!.type,
      statusOrState: new Uint8Array([1]),
      cumulativeGasUsed: 21_000n * BigInt(i + 1),
      logs: logs.filter((l) => bytesEqual(l.blockHash, blockHash) && l.transactionIndex === i),
    }));
  }
  async account(_stateRoot: Bytes, _address: Bytes): Promise<AccountRecord | null> {
    return null;
  }
  async code(_codeHash: Bytes): Promise<Bytes | undefined> {
    return new Uint8Array();
  }
  stateReader(): SyncStateReader {
    return {
      account: () => null,
      storage: () => new Uint8Array(32),
      code: () => new Uint8Array(),
    };
  }
  /** Stand-ins for the encodings: 0xf0 ++ the block number (header), 0xf1 ++ it (block). */
  async rawHeader(hash: Bytes): Promise<Bytes | undefined> {
    const n = await this.blockNumber(hash);
    return n === undefined ? undefined : new Uint8Array([0xf0, Number(n)]);
  }
  async rawBlock(hash: Bytes): Promise<Bytes | undefined> {
    const n = await this.blockNumber(hash);
    return n === undefined ? undefined : new Uint8Array([0xf1, Number(n)]);
  }
  async rawTransaction(txHash: Bytes): Promise<Bytes | undefined> {
    const found = await this.transaction(txHash);
    return found === undefined ? undefined : new Uint8Array([0x02, ...found.tx.hash.subarray(0, 4)]);
  }
  lastStateDiff: { parentRoot: Bytes; root: Bytes; limits: StateDiffLimits } | undefined;
  /** One changed account with two storage changes, one removed account. */
  async stateDiff(parentRoot: Bytes, root: Bytes, limits: StateDiffLimits): Promise<StateDiffRecord> {
    this.lastStateDiff = { parentRoot, root, limits };
    if (Date.now() > limits.deadline) throw new LimitExceededError('query timeout exceeded');
    return {
      accounts: [
        {
          key: filled(0x11, 32),
          account: { nonce: 1n, balance: 256n, storageRoot: filled(0x22, 32), codeHash: filled(0x33, 32) },
          code: new Uint8Array([0x60, 0x00]),
          storage: [
            [filled(0x01, 32), new Uint8Array([0x01, 0x00])],
            [filled(0x02, 32), null],
          ],
        },
        { key: filled(0x44, 32), account: null, storage: [] },
      ],
    };
  }
  async close(): Promise<void> {}
}

export const u256 = (n: bigint): Bytes => bigIntToFixed(n, 32);
