// `node-cli sync --from <dir> [--datadir ./data] [--to <block>]`: import (or continue importing)
// a geth chain export into the datadir. Expected failures print one line (CliError).
import { Option } from 'commander';
import type { Command } from 'commander';
import type { FollowSummary, ImportSummary, StateSourceKind } from '@chainnode/ingest';
import {
  isUpstreamUrl,
  parseCheckpoint,
  parseIngestMode,
  parseJoinState,
  parseReorgDepth,
  parseStartBlock,
  parseStateTrieFlag,
  parseTraceFramesFlag,
  SERVER_FIELDS,
} from '@chainnode/runtime/configuration';
import type { LogFormat } from '@chainnode/server';
import { CliError } from '../../cli-error.js';
import { fieldOption } from '../serve/index.js';
import { syncReport } from './report.js';

export interface SyncOptions {
  from: string;
  datadir: string;
  to?: string;
  groupBlocks?: string;
  genesis?: string;
  reorgDepth?: string;
  ingest?: string;
  stateSource?: string;
  startBlock?: string;
  checkpoint?: string;
  joinState?: string;
  stateTrie?: string;
  traceFrames?: string;
}

const STATE_SOURCES: readonly StateSourceKind[] = ['chainnode', 'prestate', 'parity'];

function parseTo(value: string | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(value))
    throw new CliError(`--to: expected a block number (decimal or 0x-hex), got "${value}"`);
  return BigInt(value);
}

/**
 * Imports (or continues importing) `opts.from` into `opts.datadir` with progress on stderr and a
 * summary on stdout, in `format` (`start` passes its log format; `sync` writes text); expected
 * failures become one-line CliErrors. `start` uses it too.
 */
export async function sync(opts: SyncOptions, format: LogFormat = 'text'): Promise<void> {
  const to = parseTo(opts.to);
  // The import's code loads here, not with the CLI: the commands that import nothing do not load it.
  const [ingestLib, { DatadirInUseError, StateTrieSettingError, sizeOnDisk }] = await Promise.all([
    import('@chainnode/ingest'),
    import('@chainnode/store'),
  ]);
  const {
    BlockVerificationError,
    ChainMismatchError,
    ChainSourceError,
    GenesisRequiredError,
    ReorgTooDeepError,
    UpstreamError,
    followUpstream,
    importChain,
  } = ingestLib;
  const reporter = syncReport(format);
  let summary: FollowSummary | ImportSummary;
  try {
    const groupBlocks = opts.groupBlocks === undefined ? undefined : Number(opts.groupBlocks);
    if (groupBlocks !== undefined && !(Number.isInteger(groupBlocks) && groupBlocks > 0)) {
      throw new CliError(`--group-blocks: expected a positive integer, got "${opts.groupBlocks}"`);
    }
    const reorgDepth = parseReorgDepth(opts.reorgDepth);
    const ingest = parseIngestMode(opts.ingest);
    const stateSource = opts.stateSource as StateSourceKind | undefined;
    if (stateSource !== undefined && !STATE_SOURCES.includes(stateSource))
      throw new CliError(`--state-source: expected one of ${STATE_SOURCES.join(', ')}, got "${opts.stateSource}"`);
    const startBlock = parseStartBlock(opts.startBlock);
    const checkpoint = parseCheckpoint(opts.checkpoint);
    const joinState = parseJoinState(opts.joinState);
    const stateTrie = parseStateTrieFlag(opts.stateTrie);
    if (stateTrie !== undefined && (startBlock !== undefined || checkpoint !== undefined) && joinState !== 'download')
      throw new CliError(
        '--state-trie: a datadir joining its chain (--start-block) proves its state on demand and holds no state trie of its own (unless --join-state download)',
      );
    const traceFrames = parseTraceFramesFlag(opts.traceFrames);
    const trie = {
      ...(stateTrie !== undefined ? { stateTrie } : {}),
      ...(traceFrames !== undefined ? { traceFrames } : {}),
    };
    if (isUpstreamUrl(opts.from)) {
      if ((startBlock !== undefined || checkpoint !== undefined) && opts.ingest !== undefined && ingest !== 'execute')
        throw new CliError('--start-block: the joined datadir ingests history only (no --ingest)');
      summary = await followUpstream({
        ...(startBlock !== undefined ? { startBlock } : {}),
        ...(checkpoint !== undefined ? { checkpoint } : {}),
        ...(joinState !== undefined ? { joinState } : {}),
        url: opts.from,
        datadir: opts.datadir,
        ...(opts.genesis !== undefined ? { genesisPath: opts.genesis } : {}),
        ...(to !== undefined ? { to } : {}),
        reorgDepth,
        ingest,
        ...(stateSource !== undefined ? { stateSource } : {}),
        ...(groupBlocks ? { groupBlocks } : {}),
        ...trie,
        log: reporter.note,
      });
    } else {
      if (opts.genesis !== undefined)
        throw new CliError('--genesis: only with --from <URL> (a directory holds its genesis.json)');
      if (startBlock !== undefined || checkpoint !== undefined)
        throw new CliError('--start-block, --checkpoint: only with --from <URL>');
      if (joinState !== undefined) throw new CliError('--join-state: only with --from <URL>');
      if (ingest === 'replicate')
        throw new CliError(
          '--ingest replicate: only with --from <URL> (a chain export holds no state changes; its blocks are executed)',
        );
      summary = await importChain({
        from: opts.from,
        datadir: opts.datadir,
        to,
        reorgDepth,
        onProgress: reporter.progress,
        log: reporter.note,
        ...(groupBlocks ? { groupBlocks } : {}),
        ...trie,
      });
    }
  } catch (err) {
    reporter.done();
    if (err instanceof CliError) throw err;
    if (err instanceof DatadirInUseError)
      throw new CliError(`${err.message} (is a server or another sync running on it?)`);
    if (
      err instanceof ChainMismatchError ||
      err instanceof ChainSourceError ||
      err instanceof GenesisRequiredError ||
      err instanceof ReorgTooDeepError ||
      err instanceof StateTrieSettingError ||
      err instanceof UpstreamError
    ) {
      throw new CliError(err.message);
    }
    if (err instanceof BlockVerificationError) throw new CliError(`import stopped: ${err.message}`);
    throw err;
  }
  reporter.done();
  reporter.summary(summary, opts.datadir, await sizeOnDisk(opts.datadir));
}

export function register(program: Command): void {
  program
    .command('sync')
    .description(
      'import a geth chain export (genesis.json + chain.rlp) or a live JSON-RPC upstream, verifying every block; resumes from the stored head',
    )
    .requiredOption(
      '--from <dir|URL>',
      'directory holding genesis.json and chain.rlp, or an http(s)/ws(s) JSON-RPC upstream',
    )
    .option('--genesis <file>', 'genesis.json of the upstream chain (with --from <URL>; required for an empty datadir)')
    .option('--reorg-depth <n>', 'deepest reorg followed before the import stops', '64')
    .option(
      '--ingest <mode>',
      "with --from <URL>: execute (run every block with the EVM) or replicate (take the upstream's transactions, receipts and state changes, verifying every root)",
      'execute',
    )
    // Replication's state source, probed when absent: chainnode | prestate | parity.
    .addOption(new Option('--state-source <kind>').hideHelp())
    .option(
      '--start-block <N|head-K>',
      "with --from <URL> and an empty datadir: join the chain at block N (or the upstream's head minus K): history from there on, verified by its roots and hash links; state proven on demand while serving, or downloaded (--join-state download)",
    )
    .option('--checkpoint <hash>', 'with --start-block: the hash the start block must have (pins the anchor)')
    .addOption(fieldOption('joinState', SERVER_FIELDS.joinState))
    .addOption(fieldOption('stateTrie', SERVER_FIELDS.stateTrie))
    .addOption(fieldOption('traceFrames', SERVER_FIELDS.traceFrames))
    .option('--datadir <dir>', 'where the store lives', './data')
    .option('--to <block>', 'stop after this block number')
    // Blocks per atomic batch; small values make crash tests meaningful on short chains.
    .addOption(new Option('--group-blocks <n>').hideHelp())
    .action(async (opts: SyncOptions) => {
      await sync(opts);
    });
}
