// fixtures/chain.rlp executed with @ethereumjs/vm from fixtures/genesis.json (see
// chain-executor.ts): every root must match, and the logs must have the promised shape.
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import type { ExecuteReport } from './chain-executor.js';
import { FIXTURES_DIR, readChain, runHelper, splitRlpItems } from './fixture-files.js';

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
  let report: ExecuteReport;
  beforeAll(async () => {
    report = await runHelper<ExecuteReport>('chain-executor', [
      FIXTURES_DIR,
      `${token}:${holderSlot}`,
      `${registry}:${nestedSlot}`,
    ]);
  }, 1_200_000); // ~80 s of CPU; slower on a shared machine

  it('reproduces every block (state root, receipts root, bloom, gas used)', () => {
    expect(report.blocks).toBe(splitRlpItems(readChain()).length);
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

describe('the executor', () => {
  it('rejects a block whose state root was altered', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'chainnode-executor-'));
    try {
      const blocks = splitRlpItems(readChain()).slice(0, 12);
      const last = RLP.decode(blocks[11]!) as [Uint8Array[], unknown, unknown];
      const stateRoot = Uint8Array.from(last[0][3]!);
      stateRoot[0] = stateRoot[0]! ^ 0xff;
      last[0][3] = stateRoot;
      blocks[11] = RLP.encode(last as never);
      await writeFile(join(dir, 'chain.rlp'), Buffer.concat(blocks));
      await copyFile(join(FIXTURES_DIR, 'genesis.json'), join(dir, 'genesis.json'));
      await expect(runHelper('chain-executor', [dir])).rejects.toThrow(/state ?root/i);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
