// `npm run fixtures`: writes fixtures/genesis.json, fixtures/chain.rlp and fixtures/README.md, and the
// fork of that chain for reorg tests: fixtures/fork/genesis.json + fixtures/fork/chain.rlp.
// Deterministic: the same sources always produce the same bytes.
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '@chainnode/core';

import { buildFixtureChain } from './src/builder.js';
import { renderReadme } from './src/readme.js';

function parseArgs(argv: readonly string[]): { out: string } {
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--out') {
      out = argv[++i];
      if (out === undefined || out.length === 0) throw new UsageError('--out: expected a directory path');
    } else if (arg === '--help' || arg === '-h') {
      throw new UsageError('');
    } else {
      throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
    }
  }
  if (out === undefined) throw new UsageError('--out <dir> is required');
  return { out: resolve(out) };
}

class UsageError extends Error {}

async function main(): Promise<void> {
  const { out } = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const log = (msg: string): void => {
    process.stderr.write(`[gen-fixtures] ${msg}\n`);
  };
  const result = await buildFixtureChain(log);
  await mkdir(out, { recursive: true });
  // Write each file next to its target, then rename: an interrupted run never leaves a
  // truncated fixture behind.
  const files: [string, string | Uint8Array][] = [
    ['genesis.json', result.genesisJson],
    ['chain.rlp', result.chainRlp],
    ['README.md', renderReadme(result)],
  ];
  await mkdir(join(out, 'fork'), { recursive: true });
  files.push(['fork/genesis.json', result.genesisJson], ['fork/chain.rlp', result.fork.chainRlp]);
  for (const [name, content] of files) {
    writeFileAtomic(join(out, name), content, 0o644);
  }
  const s = result.stats;
  log(
    `wrote ${out}: ${s.blocks} blocks, ${s.txs} txs, ${s.logs} logs, ${s.uncles} uncles, ` +
      `chain.rlp ${result.chainRlp.length} bytes, head ${s.headHash} (${((Date.now() - started) / 1000).toFixed(1)}s)`,
  );
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    if (err.message) process.stderr.write(`gen-fixtures: ${err.message}\n`);
    process.stderr.write('usage: node scripts/dist/gen-fixtures.js --out <dir>\n');
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`gen-fixtures failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
