// fixtures/chain.rlp decoded independently of the generator (see chain-decoder.ts): every
// hash, link and consensus value is re-derived there, and this test asserts what the chain
// must contain.
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { DecodeReport } from './chain-decoder.js';
import { FIXTURES_DIR, readChain, runHelper, splitRlpItems } from './fixture-files.js';

describe('fixtures/chain.rlp decoded independently', () => {
  let report: DecodeReport;
  beforeAll(async () => {
    report = await runHelper<DecodeReport>('chain-decoder', [FIXTURES_DIR]);
  }, 900_000);

  it('has a fork schedule with Berlin at genesis, London after it, and a non-mainnet chain id', () => {
    expect(report.chainId).not.toBe(1);
    expect(report.berlinBlock).toBe(0);
    expect(report.londonBlock).toBeGreaterThan(0);
    expect(report.ethash).toEqual({});
    expect(report.preLondonBlocks).toBeGreaterThan(0);
    expect(report.londonBlocks).toBeGreaterThan(0);
  });

  it('has the promised blocks, uncles and empty blocks', () => {
    expect(report.blocks).toBeGreaterThanOrEqual(1500);
    expect(report.uncles).toBeGreaterThanOrEqual(150);
    for (const n of [0, 1, 2]) expect(report.blocksByUncleCount[n] ?? 0).toBeGreaterThan(0);
    for (let d = 1; d <= 6; d++) expect(report.uncleDepths[d] ?? 0).toBeGreaterThan(0);
    expect(report.emptyBlocks).toBeGreaterThan(0);
    expect(BigInt(report.totalDifficulty)).toBeGreaterThan(0n);
  });

  it('has the promised transactions and senders', () => {
    expect(report.txs).toBeGreaterThanOrEqual(8000);
    expect(report.txTypes.legacyUnprotected).toBeGreaterThan(0);
    expect(report.txTypes.legacyEip155).toBeGreaterThan(0);
    expect(report.txTypes.eip2930).toBeGreaterThan(0);
    expect(report.txTypes.eip1559).toBeGreaterThan(0);
    expect(report.creations).toBeGreaterThan(0);
    expect(report.plainTransfers).toBeGreaterThan(0);
    expect(report.senders.length).toBeGreaterThanOrEqual(50);
    expect(report.unfundedSenders).toEqual([]);
  });

  it('agrees with the hashes and counts documented in fixtures/README.md', () => {
    const readme = readFileSync(join(FIXTURES_DIR, 'README.md'), 'utf8');
    expect(readme).toContain(`genesis hash \`${report.genesisHash}\``);
    expect(readme).toContain(`hash \`${report.headHash}\``);
    expect(readme).toContain(`| transactions | ${report.txs.toLocaleString('en-US')} |`);
    expect(readme).toContain(`| uncles | ${report.uncles.toLocaleString('en-US')};`);
  });
});

describe('the independent decoder', () => {
  it('rejects a chain whose block was tampered with', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'chainnode-decoder-'));
    try {
      // Keep the first 30 blocks and flip one byte of block 20's extraData ("chainnode fixture").
      const blocks = splitRlpItems(readChain()).slice(0, 30);
      const bad = Uint8Array.from(blocks[19]!);
      const at = Buffer.from(bad).indexOf(Buffer.from('chainnode fixture'));
      bad[at] = bad[at]! ^ 0x01;
      blocks[19] = bad;
      await writeFile(join(dir, 'chain.rlp'), Buffer.concat(blocks));
      await copyFile(join(FIXTURES_DIR, 'genesis.json'), join(dir, 'genesis.json'));
      await expect(runHelper('chain-decoder', [dir])).rejects.toThrow(/block #21 .*parentHash/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
