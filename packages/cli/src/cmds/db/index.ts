// `node-cli db info|compact --datadir <dir>`: what a datadir holds, table by table, and settling
// it so its size on disk is what it holds (the store's upkeep/). Both need the datadir to
// themselves: with a server or a sync on it they are refused with one line.
import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';
import { compactText, infoJson, infoText } from './text.js';

/** Runs `f` with the store's upkeep module; a datadir in use or empty becomes one line. */
async function withStore<T>(f: (store: typeof import('@chainnode/store')) => Promise<T>): Promise<T> {
  const store = await import('@chainnode/store');
  try {
    return await f(store);
  } catch (err) {
    if (err instanceof store.DatadirInUseError)
      throw new CliError(`${err.message} (stop the server or sync using it first)`);
    if (err instanceof store.DatadirEmptyError) throw new CliError(err.message);
    throw err;
  }
}

export function register(program: Command): void {
  const db = program.command('db').description("a datadir's upkeep: what it holds, and compacting it");
  db.command('info')
    .description('size on disk per table and group, and the state layout (the datadir must not be in use)')
    .option('--datadir <dir>', 'datadir to measure', './data')
    .option('--json', 'print a JSON object')
    .action(async (opts: { datadir: string; json?: boolean }) => {
      const sizes = await withStore((s) =>
        s.measureDatadir(opts.datadir, {
          onTable: (table, i, n) => process.stderr.write(`db info: reading ${table} (${i + 1}/${n})\n`),
        }),
      );
      process.stdout.write(`${opts.json ? JSON.stringify(infoJson(sizes)) : infoText(sizes)}\n`);
    });
  db.command('compact')
    .description(
      'compact the datadir so its size on disk is what it holds (LevelDB over the whole key space, log segment files cut to their recorded length); the datadir must not be in use',
    )
    .option('--datadir <dir>', 'datadir to compact', './data')
    .action(async (opts: { datadir: string }) => {
      const result = await withStore((s) =>
        s.compactDatadir(opts.datadir, {
          onProgress: (step, i, n) => process.stderr.write(`db compact: ${step} (${i + 1}/${n})\n`),
        }),
      );
      process.stdout.write(`${compactText(opts.datadir, result)}\n`);
    });
}
