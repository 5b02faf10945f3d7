// What the benches do with the node's CLI and their own command line: read a flag, run node-cli
// (this checkout's, or another build's with --cli for before/after runs), import a chain into a
// temporary datadir, create an API key.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { runChild, servePort, spawnChild } from './children.js';

/** The repository root (this file: <repo>/bench/dist/src/cli.js). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** This checkout's node-cli.js. */
export const NODE_CLI = join(ROOT, 'packages', 'cli', 'bin', 'node-cli.js');

/** The value after `--<name>` on the command line, else `dflt`. */
export function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

/** The node-cli.js a bench runs: --cli (another build's) or this checkout's. */
export function cliFromArgs(): string {
  return resolve(arg('cli', NODE_CLI) as string);
}

/** Runs node-cli to completion: its stdout (its stderr passes through); throws on a non-zero exit. */
export function nodeCliSync(cli: string, args: string[]): string {
  return execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** `keys create` flags for a key no bench run exhausts: a daily budget of 9e14 credits, named `label`. */
export function benchBudget(label: string): string[] {
  return ['--daily-credits', '900000000000000', '--label', label];
}

/** The arguments of `node-cli keys create` with a custom plan and `flags`, printing JSON. */
export function keyArgs(datadir: string, flags: string[] = []): string[] {
  return ['keys', 'create', '--plan', 'custom', ...flags, '--json', '--datadir', datadir];
}

/** The key out of `keys create --json`'s output. */
export function keyOf(json: string): string {
  return (JSON.parse(json) as { key: string }).key;
}

/** Creates a key in `datadir` (see keyArgs) in a tracked child process; resolves with it. */
export async function createKey(
  cli: string,
  datadir: string,
  flags: string[] = [],
  onStderr?: (line: string) => void,
): Promise<string> {
  return keyOf(await runChild(process.execPath, [cli, ...keyArgs(datadir, flags)], onStderr));
}

/** Creates a key in `datadir` (see keyArgs), synchronously. */
export function createKeySync(cli: string, datadir: string, flags: string[] = []): string {
  return keyOf(nodeCliSync(cli, keyArgs(datadir, flags)));
}

/**
 * Imports the chain export `from` (node-cli sync) into `<tmp>/data`, `tmp` a new temporary
 * directory named after `prefix`, which the caller removes.
 */
export function importIntoTemp(
  cli: string,
  from: string,
  prefix: string,
  who = 'bench',
): { tmp: string; datadir: string } {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const datadir = join(tmp, 'data');
  console.error(`${who}: importing ${from} into ${datadir}`);
  nodeCliSync(cli, ['sync', '--from', from, '--datadir', datadir]);
  return { tmp, datadir };
}

/** `node-cli serve --port 0 <argv>` as a tracked child; resolves once it listens, with its port. */
export async function startServe(cli: string, argv: string[]): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawnChild(process.execPath, [cli, 'serve', '--port', '0', ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { proc, port: await servePort(proc) };
}
