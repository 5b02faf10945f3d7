// fixtures/chain.rlp executed once per run: the import that every suite shares (testkit's
// prepared datadir, `node-cli sync`) runs every block with @ethereumjs/vm and stops at the first
// block whose state root, receipts root, bloom or gas used differs from what the VM computed, so
// a store holding every block of chain.rlp is the chain reproduced. The logs' promised shape and
// the README's worked examples are read back from that store and re-derived here. The executor
// helper (chain-executor.ts, @ethereumjs/vm alone, no product code) is checked on a tampered
// prefix of the chain.
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { RLP } from '@ethereumjs/rlp';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import type { ExecuteReport } from './chain-executor.js';
import { countReceipt, emptyReport } from './chain-executor.js';
import { FIXTURES_DIR, readChain, runHelper, splitRlpItems } from './fixture-files.js';

/** What the imported chain holds, counted as the executor counts it, and the head's hash. */
type ChainReport = ExecuteReport & { headHash: string };

const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const bytes = (h: string): Uint8Array => Buffer.from(h.replace(/^0x/, ''), 'hex');

/** Reads every block's receipts and the head's storage at `storageQueries` from a copy of the shared import. */
async function importedChain(storageQueries: readonly string[]): Promise<ChainReport> {
  const copy = await datadirCopy('fixtures');
  const store = await openChainStore(copy.dir);
  try {
    const head = await store.head();
    const report: ChainReport = { ...emptyReport(), blocks: Number(head.number), headHash: hex(head.hash) };
    for (let n = 1n; n <= head.number; n++) {
      const receipts = (await store.receipts((await store.canonicalHash(n)) as Uint8Array)) ?? [];
      for (const r of receipts) {
        const reverted = r.statusOrState.length <= 1 && (r.statusOrState[0] ?? 0) === 0;
        countReceipt(
          report,
          reverted,
          r.logs.map((l) => [l.address, l.topics, l.data] as const),
        );
      }
    }
    const root = ((await store.header(head.hash)) as { stateRoot: Uint8Array }).stateRoot;
    report.headStateRoot = hex(root);
    for (const q of storageQueries) {
      const [address, slot] = q.split(':') as [string, string];
      report.storage[q] = hex(await store.storageAt(root, bytes(address), bytes(slot)));
    }
    return report;
  } finally {
    await store.close();
    await copy.cleanup();
  }
}

/** keccak256(pad32(key) ++ pad32(slot)), computed here independently of the generator. */
function mappingSlot(key: string, slot: string): string {
  const buf = Buffer.from(key.replace(/^0x/, '').padStart(64, '0') + slot.replace(/^0x/, '').padStart(64, '0'), 'hex');
  return `0x${Buffer.from(keccak256(buf)).toString('hex')}`;
}

function match(text: string, re: RegExp, what: string): RegExpMatchArray {
  const m = text.match(re);
  if (m === null) throw new Error(`fixtures/README.md: cannot find ${what}`);
  return m;
}

// The README's worked storage examples, re-derived: slots by the mapping rule, values from the
// state the VM computes.
const readme = readFileSync(join(FIXTURES_DIR, 'README.md'), 'utf8');
const [, holder, token, holderSlot, holderValue] = match(
  readme,
  /Holder `(0x[0-9a-f]{40})`[\s\S]*?eth_getStorageAt\("(0x[0-9a-f]{40})", "(0x[0-9a-f]{64})", "latest"\)` returns\s*`(0x[0-9a-f]{64})`/,
  'the token worked example',
) as unknown as [string, string, string, string, string];
const [, caller, keyDec, nestedSlot, nestedValue] = match(
  readme,
  /made by `(0x[0-9a-f]{40})` with\s+key (\d+):[\s\S]*?= `(0x[0-9a-f]{64})` and holds\s+`(0x[0-9a-f]{64})`/,
  'the nested mapping example',
) as unknown as [string, string, string, string, string];
const registry = match(
  readme,
  /Registry \(plain slots \+ nested mapping\) \| `(0x[0-9a-f]{40})`/,
  'the Registry address',
)[1]!;

describe('fixtures/chain.rlp executed with @ethereumjs/vm', () => {
  let report: ChainReport;
  beforeAll(async () => {
    report = await importedChain([`${token}:${holderSlot}`, `${registry}:${nestedSlot}`]);
  }, 1_200_000); // the shared import: ~80 s of CPU when this suite is the first to ask for it

  it('reproduces every block (state root, receipts root, bloom, gas used)', () => {
    const blocks = splitRlpItems(readChain());
    expect(report.blocks).toBe(blocks.length);
    const last = RLP.decode(blocks[blocks.length - 1] as Uint8Array) as Uint8Array[][];
    expect(report.headHash).toBe(hex(keccak256(RLP.encode(last[0] as Uint8Array[]))));
  });

  it('has at least 30,000 logs, a hot contract with > 10,000 and >= 30% of them, and rare emitters', () => {
    expect(report.logs).toBeGreaterThanOrEqual(30_000);
    const counts = Object.values(report.logsByAddress);
    const hot = Math.max(...counts);
    expect(hot).toBeGreaterThan(10_000);
    expect(hot / report.logs).toBeGreaterThanOrEqual(0.3);
    expect(counts.filter((n) => n <= 20).length).toBeGreaterThanOrEqual(20);
  });

  it('has logs with 0..4 topics, empty data and data of 200 bytes or more', () => {
    for (let t = 0; t <= 4; t++) expect(report.logsByTopicCount[t]).toBeGreaterThan(0);
    expect(report.logsWithEmptyData).toBeGreaterThan(0);
    expect(report.logsWithDataAtLeast200).toBeGreaterThan(0);
  });

  it("matches the README's worked storage examples (mapping rule and head state)", () => {
    expect(holderSlot).toBe(mappingSlot(holder, '0x0'));
    expect(report.storage[`${token}:${holderSlot}`]).toBe(holderValue);
    expect(BigInt(holderValue)).toBeGreaterThan(0n);
    const inner = mappingSlot(caller, '0x3');
    expect(nestedSlot).toBe(mappingSlot(BigInt(keyDec).toString(16), inner));
    expect(report.storage[`${registry}:${nestedSlot}`]).toBe(nestedValue);
  });

  it('has reverted transactions, none of them with logs', () => {
    expect(report.reverted).toBeGreaterThan(0);
    expect(report.revertedWithLogs).toBe(0);
  });
});

describe('the executor helper (@ethereumjs/vm alone)', () => {
  it('rejects a block whose state root was altered', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'chainnode-executor-'));
    try {
      // Block 1 (which the helper must accept) and block 2 with its state root altered.
      const blocks = splitRlpItems(readChain()).slice(0, 2);
      const last = RLP.decode(blocks[1]!) as [Uint8Array[], unknown, unknown];
      const stateRoot = Uint8Array.from(last[0][3]!);
      stateRoot[0] = stateRoot[0]! ^ 0xff;
      last[0][3] = stateRoot;
      blocks[1] = RLP.encode(last as never);
      await writeFile(join(dir, 'chain.rlp'), Buffer.concat(blocks));
      await copyFile(join(FIXTURES_DIR, 'genesis.json'), join(dir, 'genesis.json'));
      await expect(runHelper('chain-executor', [dir])).rejects.toThrow(/state ?root.*block number=2 /is);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
