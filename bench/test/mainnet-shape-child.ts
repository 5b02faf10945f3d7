// The CPU-heavy steps of mainnet-shape.test.ts, run as child node processes: jest's module
// sandbox makes the generator's and the import's execution about 1.7 times slower. Each prints
// one JSON line on stdout:
//   node mainnet-shape-child.js generate <params json> <dir> [<datadir>]
//     writes <dir>/chain.rlp, genesis.json and manifest.json (and the datadir, if given);
//     prints { manifest, growth }
//   node mainnet-shape-child.js import <from dir> <datadir>
//     runs importChain (what `node-cli sync --from` runs); prints { blocks, txs, logs, headHash },
//     or { refused } with the error's name and message when it throws a BlockVerificationError
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BlockVerificationError, importChain } from '@chainnode/ingest';
import { generateMainnetShape, type ShapeParams } from '../src/mainnet-shape/generator.js';

async function generate(params: ShapeParams, dir: string, datadir?: string) {
  const r = await generateMainnetShape({
    ...params,
    chainRlpPath: join(dir, 'chain.rlp'),
    ...(datadir !== undefined ? { datadir } : {}),
  });
  writeFileSync(join(dir, 'genesis.json'), r.genesisJson);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(r.manifest));
  return { manifest: r.manifest, growth: r.growth };
}

async function runImport(from: string, datadir: string) {
  try {
    const s = await importChain({ from, datadir });
    return { blocks: s.blocks, txs: s.txs, logs: s.logs, headHash: `0x${Buffer.from(s.head.hash).toString('hex')}` };
  } catch (err) {
    if (err instanceof BlockVerificationError) return { refused: `${err.name}: ${err.message}` };
    throw err;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [op, a, b, c] = process.argv.slice(2) as [string, string, string, string | undefined];
  const run =
    op === 'generate' ? generate(JSON.parse(a) as ShapeParams, b, c) : op === 'import' ? runImport(a, b) : undefined;
  if (run === undefined) throw new Error(`unknown step ${op}`);
  run
    .then((out) => process.stdout.write(`${JSON.stringify(out)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    });
}
