// Formatters: exact JSON (field presence, order, encodings) as geth v1.16 marshals it.
import { blockJsonAscii } from '@chainnode/core';
import { blockText, formatBlock, formatUncle } from '../src/formatters/block.js';
import { formatLog } from '../src/formatters/log.js';
import { formatProof, formatStorageKey } from '../src/formatters/proof.js';
import { formatAnyTransaction, formatTransaction } from '../src/formatters/transaction.js';
import { blobTx, blocks, dynamicTx, eip155Tx, filled, legacyTx, logs, setCodeTx, uncleHeader } from './fake-store.js';
import type { BlockRecord, TxRecord } from '@chainnode/core';

const x = (byte: number, len: number): string => `0x${byte.toString(16).padStart(2, '0').repeat(len)}`;

function at(tx: TxRecord, blockIndex: number, txIndex: number) {
  const b = blocks[blockIndex]!.header;
  return {
    tx,
    blockHash: b.hash,
    blockNumber: b.number,
    transactionIndex: txIndex,
    blockTimestamp: b.timestamp,
    baseFeePerGas: b.baseFeePerGas,
  };
}

const location1 = { blockHash: x(0xa1, 32), blockNumber: '0x1', blockTimestamp: '0x3f4' };
const location2 = { blockHash: x(0xa2, 32), blockNumber: '0x2', blockTimestamp: '0x400' };

describe('transaction formatter', () => {
  test('legacy without replay protection: no chainId, yParity or accessList', () => {
    expect(JSON.stringify(formatTransaction(at(legacyTx, 1, 0)))).toBe(
      JSON.stringify({
        ...location1,
        from: x(0xf1, 20),
        gas: '0x5208',
        gasPrice: '0xa',
        hash: x(0x01, 32),
        input: '0x',
        nonce: '0x0',
        to: x(0x70, 20),
        transactionIndex: '0x0',
        value: '0x1',
        type: '0x0',
        v: '0x1b',
        r: '0x1',
        s: '0x2',
      }),
    );
  });

  test('legacy EIP-155: chainId, contract creation has to: null', () => {
    const json = formatTransaction(at(eip155Tx, 1, 1));
    expect(JSON.stringify(json)).toBe(
      JSON.stringify({
        ...location1,
        from: x(0xf1, 20),
        gas: '0x5208',
        gasPrice: '0xa',
        hash: x(0x02, 32),
        input: '0x6000',
        nonce: '0x1',
        to: null,
        transactionIndex: '0x1',
        value: '0x1',
        type: '0x0',
        chainId: '0x539',
        v: '0xa95',
        r: '0x1',
        s: '0x2',
      }),
    );
  });

  test('EIP-1559: gasPrice is the effective price min(tip + baseFee, feeCap)', () => {
    expect(JSON.stringify(formatTransaction(at(dynamicTx, 2, 0)))).toBe(
      JSON.stringify({
        ...location2,
        from: x(0xf1, 20),
        gas: '0xc350',
        gasPrice: '0x7', // tip 2 + base fee 5 < cap 100
        maxFeePerGas: '0x64',
        maxPriorityFeePerGas: '0x2',
        hash: x(0x03, 32),
        input: '0x',
        nonce: '0x2',
        to: x(0x70, 20),
        transactionIndex: '0x0',
        value: '0x0',
        type: '0x2',
        accessList: [{ address: x(0x70, 20), storageKeys: [x(0, 32)] }],
        chainId: '0x539',
        v: '0x1',
        r: '0x3',
        s: '0x4',
        yParity: '0x1',
      }),
    );
  });

  test('blob: fee cap below tip + base fee caps the price; blob fields present', () => {
    const json = formatTransaction(at(blobTx, 2, 1));
    expect(json.gasPrice).toBe('0x7'); // min(tip 2 + base fee 5, cap 7)
    expect(json.maxFeePerBlobGas).toBe('0x9');
    expect(json.blobVersionedHashes).toEqual([x(0x01, 32)]);
    expect(json.accessList).toEqual([]);
    expect(json.yParity).toBe('0x0');
    expect(json.v).toBe('0x0');
    expect(Object.keys(json)).toEqual([
      'blockHash',
      'blockNumber',
      'blockTimestamp',
      'from',
      'gas',
      'gasPrice',
      'maxFeePerGas',
      'maxPriorityFeePerGas',
      'maxFeePerBlobGas',
      'hash',
      'input',
      'nonce',
      'to',
      'transactionIndex',
      'value',
      'type',
      'accessList',
      'chainId',
      'blobVersionedHashes',
      'v',
      'r',
      's',
      'yParity',
    ]);
  });

  test('fee cap lower than tip + base fee', () => {
    const json = formatTransaction(at({ ...dynamicTx, maxFeePerGas: 6n }, 2, 0));
    expect(json.gasPrice).toBe('0x6');
  });

  test('set-code: authorizationList in geth field order', () => {
    const json = formatTransaction(at(setCodeTx, 2, 2));
    expect(JSON.stringify(json.authorizationList)).toBe(
      JSON.stringify([{ chainId: '0x0', address: x(0x70, 20), nonce: '0x7', yParity: '0x1', r: '0x5', s: '0x6' }]),
    );
    expect(json.blobVersionedHashes).toBeUndefined();
    expect(json.type).toBe('0x4');
  });
});

describe('block formatter', () => {
  test('pre-London block with hashes: alphabetical keys, no fork fields', () => {
    const json = formatBlock(blocks[1]!, false);
    expect(JSON.stringify(json)).toBe(
      JSON.stringify({
        difficulty: '0x20000',
        extraData: '0xabcd',
        gasLimit: '0x1c9c380',
        gasUsed: '0x5208',
        hash: x(0xa1, 32),
        logsBloom: x(0, 256),
        miner: x(0xc0, 20),
        mixHash: x(0x33, 32),
        nonce: x(0, 8),
        number: '0x1',
        parentHash: x(0xa0, 32),
        receiptsRoot: x(0x72, 32),
        sha3Uncles: x(0x1d, 32),
        size: '0x2bc',
        stateRoot: x(0x51, 32),
        timestamp: '0x3f4',
        totalDifficulty: '0x40000',
        transactions: [x(0x01, 32), x(0x02, 32)],
        transactionsRoot: x(0x70, 32),
        uncles: [],
      }),
    );
  });

  test("core's blockJsonAscii (the store's hashes-only answers) is blockText's bytes, for 0 to 3 hashes", () => {
    for (const b of blocks)
      for (let n = 0; n <= 3; n++) {
        const hashes = Array.from({ length: n }, (_, i) => new Uint8Array(32).fill(0x0f + i * 0x31));
        const text = blockText({ ...b, transactionHashes: hashes }, false);
        const ascii = blockJsonAscii(b, Buffer.concat(hashes));
        expect(Buffer.from(ascii).toString('latin1')).toBe(text);
      }
    expect(() => blockJsonAscii(blocks[0] as BlockRecord, new Uint8Array(31))).toThrow('not 32 bytes each');
  });

  test('Prague block: every fork field, withdrawals, full transactions', () => {
    const json = formatBlock(blocks[2]!, true);
    expect(Object.keys(json)).toEqual([
      'baseFeePerGas',
      'blobGasUsed',
      'difficulty',
      'excessBlobGas',
      'extraData',
      'gasLimit',
      'gasUsed',
      'hash',
      'logsBloom',
      'miner',
      'mixHash',
      'nonce',
      'number',
      'parentBeaconBlockRoot',
      'parentHash',
      'receiptsRoot',
      'requestsHash',
      'sha3Uncles',
      'size',
      'stateRoot',
      'timestamp',
      'totalDifficulty',
      'transactions',
      'transactionsRoot',
      'uncles',
      'withdrawals',
      'withdrawalsRoot',
    ]);
    expect(json.baseFeePerGas).toBe('0x5');
    expect(json.blobGasUsed).toBe('0x20000');
    expect(json.excessBlobGas).toBe('0x0');
    expect(json.requestsHash).toBe(x(0x99, 32));
    expect(JSON.stringify(json.withdrawals)).toBe(
      JSON.stringify([{ index: '0x0', validatorIndex: '0x5', address: x(0x70, 20), amount: '0x20' }]),
    );
    expect(json.uncles).toEqual([x(0xee, 32)]);
    const txs = json.transactions as { hash: string; transactionIndex: string; blockHash: string }[];
    expect(txs.map((t) => t.hash)).toEqual([x(0x03, 32), x(0x04, 32), x(0x05, 32)]);
    expect(txs.map((t) => t.transactionIndex)).toEqual(['0x0', '0x1', '0x2']);
    expect(txs.every((t) => t.blockHash === x(0xa2, 32))).toBe(true);
  });

  test('uncle: empty body, no transactions, totalDifficulty null', () => {
    const json = formatUncle({ header: uncleHeader, size: 530 });
    expect(json.transactions).toBeUndefined();
    expect(json.uncles).toEqual([]);
    expect(json.totalDifficulty).toBeNull();
    expect(json.size).toBe('0x212');
    expect(json.hash).toBe(x(0xee, 32));
    expect(json.miner).toBe(x(0xc1, 20));
    expect('withdrawals' in json).toBe(false);
    expect(Object.keys(json)).toEqual([...Object.keys(json)].sort());
  });
});

describe('log formatter', () => {
  test('geth field order with blockTimestamp and removed:false', () => {
    expect(JSON.stringify(formatLog(logs[1]!))).toBe(
      JSON.stringify({
        address: x(0xbb, 20),
        topics: [x(0x10, 32), x(0x11, 32)],
        data: '0x01',
        blockNumber: '0x1',
        transactionHash: x(0x02, 32),
        transactionIndex: '0x1',
        blockHash: x(0xa1, 32),
        blockTimestamp: '0x3f4',
        logIndex: '0x1',
        removed: false,
      }),
    );
  });

  test('empty data and no topics', () => {
    const json = formatLog({ ...logs[2]!, data: new Uint8Array() });
    expect(json.data).toBe('0x');
    expect(json.topics).toEqual([]);
  });
});

describe('proof formatter', () => {
  test('storage keys echo as data when given as 32 bytes, else as quantity', () => {
    expect(formatStorageKey(filled(0, 32), 32)).toBe(x(0, 32));
    expect(formatStorageKey(filled(0, 32), 1)).toBe('0x0');
    const slot = new Uint8Array(32);
    slot[30] = 0x01;
    slot[31] = 0x0a;
    expect(formatStorageKey(slot, 2)).toBe('0x10a');
  });

  test('account proof fields in geth order', () => {
    const json = formatProof(
      {
        address: filled(0xaa, 20),
        nonce: 0n,
        balance: 0n,
        codeHash: filled(0xc5, 32),
        storageHash: filled(0x56, 32),
        accountProof: [new Uint8Array([0xc1, 0x80])],
        storageProof: [{ key: filled(0, 32), value: 0n, proof: [] }],
      },
      [1],
    );
    expect(JSON.stringify(json)).toBe(
      JSON.stringify({
        address: x(0xaa, 20),
        accountProof: ['0xc180'],
        balance: '0x0',
        codeHash: x(0xc5, 32),
        nonce: '0x0',
        storageHash: x(0x56, 32),
        storageProof: [{ key: '0x0', value: '0x0', proof: [] }],
      }),
    );
  });
});

describe('OP-stack deposits and unknown types', () => {
  const deposit: TxRecord = {
    type: 0x7e,
    hash: Uint8Array.from(Buffer.from('07'.repeat(32), 'hex')),
    from: Uint8Array.from(Buffer.from('de'.repeat(20), 'hex')),
    nonce: 9n, // the receipt's depositNonce, as the store fills it in
    gas: 1_000_000n,
    to: Uint8Array.from(Buffer.from('42'.repeat(20), 'hex')),
    value: 5n,
    input: Uint8Array.of(0xab),
    v: 0n,
    r: 0n,
    s: 0n,
    gasPrice: 0n,
    sourceHash: Uint8Array.from(Buffer.from('5c'.repeat(32), 'hex')),
    mint: 0x100n,
    isSystemTx: false,
    depositReceiptVersion: 1n,
  };

  test("a deposit as op-geth's RPCTransaction: no signature or fee fields, deposit fields last", () => {
    expect(JSON.stringify(formatTransaction(at(deposit, 2, 0)))).toBe(
      JSON.stringify({
        ...location2,
        from: x(0xde, 20),
        gas: '0xf4240',
        gasPrice: '0x0',
        hash: x(0x07, 32),
        input: '0xab',
        nonce: '0x9',
        to: x(0x42, 20),
        transactionIndex: '0x0',
        value: '0x5',
        type: '0x7e',
        v: '0x0',
        r: '0x0',
        s: '0x0',
        sourceHash: x(0x5c, 32),
        mint: '0x100',
        depositReceiptVersion: '0x1',
      }),
    );
  });

  test('a zero mint and a false system flag are left out, a true flag shown; no receipt version without one', () => {
    const { depositReceiptVersion: _v, ...noVersion } = deposit;
    const json = formatTransaction(at({ ...noVersion, mint: 0n, isSystemTx: true, to: null }, 2, 1));
    expect(json.mint).toBeUndefined();
    expect(json.isSystemTx).toBe(true);
    expect(json.to).toBeNull();
    expect(json.depositReceiptVersion).toBeUndefined();
    expect(Object.keys(json).slice(-5)).toEqual(['v', 'r', 's', 'sourceHash', 'isSystemTx']);
  });

  test('an unknown type shows where it is, its type, hash and sender only', () => {
    const opaque: TxRecord = { ...deposit, type: 0x64, opaque: true };
    expect(JSON.stringify(formatAnyTransaction(at(opaque, 2, 3)))).toBe(
      JSON.stringify({
        ...location2,
        from: x(0xde, 20),
        hash: x(0x07, 32),
        transactionIndex: '0x3',
        type: '0x64',
      }),
    );
    expect(() => formatTransaction(at(opaque, 2, 3))).toThrow('not known here');
  });
});
