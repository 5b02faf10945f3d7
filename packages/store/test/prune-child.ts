// The pruner's crash tests run this in a child process: imports the synthetic chain of
// prune-chain.ts with a trie window of 16 into `datadir` up to block `to` (resuming from the
// durable head), then runs a final pruning cycle. Prints a line per flush ("flushed N") and per
// pruning report ("mark", "sweep", "done" ...), so the parent can kill it at a chosen step.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildChain, openWriter, windowDatadir } from './prune-chain.js';

export const CHILD_WINDOW = 16;

async function main(): Promise<void> {
  const [datadir, to] = process.argv.slice(2) as [string, string];
  if (!existsSync(join(datadir, 'chain'))) await windowDatadir(datadir, CHILD_WINDOW);
  const writer = await openWriter(datadir, {
    prune: { onReport: (r) => process.stdout.write(`${r.phase} ${r.from}\n`), markBatch: 4, sweepChunk: 8 },
  });
  try {
    await buildChain(writer, Number(to), 4, (n) => {
      process.stdout.write(`flushed ${n}\n`);
    });
    const last = await writer.pruneTrie();
    process.stdout.write(`final ${last?.phase} ${last?.from}\n`);
  } finally {
    await writer.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
