// `node-cli db info|compact|convert --datadir <dir>`: what a datadir holds, table by table;
// settling it so its size on disk is what it holds; turning a datadir of an earlier release into
// the current layout (the store's upkeep/). All need the datadir to themselves: with a server or a
// sync on it they are refused with one line.
import type { Command } from 'commander';
import { CliError } from '../../cli-error.js';
import { compactText, convertText, infoJson, infoText } from './text.js';

/** Runs `f` with the store's upkeep module; a datadir in use or empty becomes one line. */
async function withStore<T>(f: (store: typeof import('@chainnode/store')) => Promise<T>): Promise<T> {
  const store = await import('@chainnode/store');
  try {
    return await f(store);
  } catch (err) {
    if (err instanceof store.DatadirInUseError)
      throw new CliError(`${err.message} (stop the server or sync using it first)`);
    if (err instanceof store.DatadirEmptyError) throw new CliError(err.message);
    if (err instanceof store.ConvertRefusedError || err instanceof store.StateTrieSettingError)
      throw new CliError(err.message);
    throw err;
  }
}

export function register(program: Command): void {
  const db = program
    .command('db')
    .description("a datadir's upkeep: what it holds, compacting it, converting it to the current layout");
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
  db.command('convert')
    .description(
      "convert the datadir in place to the current layout: the flat state history built from its tries when it has none (resumable), the address-appearance index built from its blocks when it has none (resumable), block bodies and recorded trace rows of one row a block cut into rows of 16 transactions, and the trace rows an earlier release stored uncompressed, compressed (resumable), the trie's branch nodes rewritten as deltas (resumable), the sealed log segments an earlier release wrote sealed again as now (compressed, without their logs' hashes), and the state trie's retention changed (archive -> window=<N> prunes once at the head, as does a run after a pruning cycle stopped midway); the datadir must not be in use",
    )
    .option('--datadir <dir>', 'datadir to convert', './data')
    .option(
      '--state-trie <mode>',
      "the state trie's retention to convert to: window=<N> or archive (default: keep the datadir's)",
    )
    .action(async (opts: { datadir: string; stateTrie?: string }) => {
      const { result, rowTxs } = await withStore(async (s) => ({
        result: await s.convertDatadir(opts.datadir, {
          ...(opts.stateTrie !== undefined ? { stateTrie: s.parseStateTrie(opts.stateTrie) } : {}),
          onProgress: (line) => process.stderr.write(`db convert: ${line}\n`),
        }),
        rowTxs: { body: s.BODY_ROW_TXS, trace: (await import('@chainnode/core')).TRACE_ROW_TXS },
      }));
      process.stdout.write(`${convertText(opts.datadir, result, rowTxs)}\n`);
      // A pruning cycle that failed leaves the conversion unfinished: say so in the exit status too.
      if (result.prune !== undefined && result.prune.phase !== 'done') process.exitCode = 1;
    });
}
