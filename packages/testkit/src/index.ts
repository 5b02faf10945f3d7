// Test helpers shared by every package's tests. They never import product packages: a datadir
// is prepared by spawning the real CLI (`node-cli sync`), once per set of inputs, and cached in
// <repo>/.cache/datadirs/. LevelDB admits one process per datadir, so each test that opens a
// store works on its own copy (datadirCopy).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type ChainName = 'fixtures' | 'execution-apis';

/** The repository root (the directory of the root package.json). */
export function repoRoot(): string {
  // this file: <repo>/packages/testkit/dist/src/index.js
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
}

/** ../shared/chains next to the repository, or undefined when absent (tests then log a skip). */
export function sharedChainsDir(): string | undefined {
  const dir = resolve(repoRoot(), '..', 'shared', 'chains');
  return existsSync(dir) ? dir : undefined;
}

/** Directory holding genesis.json + chain.rlp of `chain`, or undefined when not available. */
export function chainDir(chain: ChainName): string | undefined {
  const dir =
    chain === 'fixtures' ? join(repoRoot(), 'fixtures') : join(sharedChainsDir() ?? '/nonexistent', 'execution-apis');
  return existsSync(join(dir, 'genesis.json')) && existsSync(join(dir, 'chain.rlp')) ? dir : undefined;
}

/** The chains on this machine: the fixture chain always, execution-apis' when it is checked out. */
export function availableChains(): ChainName[] {
  return ['fixtures', ...(chainDir('execution-apis') !== undefined ? (['execution-apis'] as const) : [])];
}

/** Path of the CLI launcher. */
export function cliBin(): string {
  return join(repoRoot(), 'packages', 'cli', 'bin', 'node-cli.js');
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node-cli <args>` as a child process and collects its output (never throws on exit code). */
export function runCli(args: string[], opts: { timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((res) => {
    execFile(
      process.execPath,
      [cliBin(), ...args],
      { timeout: opts.timeoutMs ?? 600_000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code =
          err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
        res({ code, stdout, stderr });
      },
    );
  });
}

async function hashTree(h: ReturnType<typeof createHash>, dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await hashTree(h, p);
    else if (e.isFile() && e.name.endsWith('.js')) h.update(p).update(await readFile(p));
  }
}

/** inputsHash by chain directory, once a process: the inputs do not change during a test run. */
const inputsHashes = new Map<string, Promise<string>>();

/** Hash of the chain's input files and of the code that imports them (core/exec/store/ingest/cli dist) and prepares them (testkit). */
function inputsHash(dir: string): Promise<string> {
  let h = inputsHashes.get(dir);
  if (h === undefined) {
    h = hashInputs(dir);
    inputsHashes.set(dir, h);
    h.catch(() => inputsHashes.delete(dir));
  }
  return h;
}

async function hashInputs(dir: string): Promise<string> {
  const h = createHash('sha256');
  h.update(await readFile(join(dir, 'genesis.json')));
  const chain = join(dir, 'chain.rlp');
  const s = await stat(chain);
  // Content hash of the chain (streamed through readFile in one go is fine up to a few hundred MB).
  h.update(String(s.size)).update(await readFile(chain));
  for (const pkg of ['core', 'exec', 'store', 'ingest', 'cli', 'testkit'])
    await hashTree(h, join(repoRoot(), 'packages', pkg, 'dist', 'src'));
  return h.digest('hex').slice(0, 16);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A datadir holding `chain` fully imported by `node-cli sync` and compacted, shared and read-only: never open
 * it directly (use datadirCopy). Prepared once per inputs; safe across concurrent jest workers
 * (a lock directory, then an atomic rename of the finished datadir).
 */
export async function preparedDatadir(chain: ChainName): Promise<string> {
  const src = chainDir(chain);
  if (src === undefined) throw new Error(`chain ${chain} is not available (no genesis.json + chain.rlp)`);
  const cache = join(repoRoot(), '.cache', 'datadirs');
  await mkdir(cache, { recursive: true });
  const target = join(cache, `${chain}-${await inputsHash(src)}`);
  const lock = `${target}.lock`;
  for (;;) {
    if (existsSync(target)) return target;
    try {
      await mkdir(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Someone else is importing; a lock older than 30 minutes is from a dead process.
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > 30 * 60_000) await rm(lock, { recursive: true, force: true });
      await sleep(250);
      continue;
    }
    try {
      if (existsSync(target)) return target;
      const tmp = `${target}.tmp-${process.pid}`;
      await rm(tmp, { recursive: true, force: true });
      const r = await runCli(['sync', '--from', src, '--datadir', tmp]);
      if (r.code !== 0) throw new Error(`node-cli sync of ${chain} failed (exit ${r.code}): ${r.stderr.trim()}`);
      // Settled once here rather than in every copy: as the import leaves it, the fixture
      // datadir is 97 MB, most of it LevelDB's write-ahead log, which every open of every copy
      // replays (~0.5 s of CPU each); compacted it is 28 MB and opens at once.
      const c = await runCli(['db', 'compact', '--datadir', tmp]);
      if (c.code !== 0) throw new Error(`node-cli db compact of ${chain} failed (exit ${c.code}): ${c.stderr.trim()}`);
      await rename(tmp, target);
      return target;
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
}

/** A private copy of the prepared datadir of `chain`; `cleanup` removes it. */
export async function datadirCopy(chain: ChainName): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const src = await preparedDatadir(chain);
  const base = await mkdtemp(join(tmpdir(), `chainnode-${chain}-`));
  const dir = join(base, 'data');
  await cp(src, dir, { recursive: true });
  return { dir, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/** A temporary directory and the call that removes it. */
export interface TempDir {
  dir: string;
  cleanup: () => Promise<void>;
}

/** A fresh, empty temporary directory; `cleanup` removes it. */
export async function tempDir(prefix = 'chainnode-'): Promise<TempDir> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
export { NO_REDIS, freePort, redisServerPath, startRedis } from './redis.js';
export type { RedisProcess } from './redis.js';
export { rawWebSocket, readUntilClose, textFrame } from './raw-ws.js';
export { WsCtor, rssMb } from './flood.js';
export type { WsClient } from './flood.js';
export { Sfc32 } from './sfc32.js';
export { mulberry32, seededRandom } from './mulberry32.js';
export {
  ANVIL_DEV_ACCOUNTS,
  cancunConfig,
  cancunGenesis,
  londonConfig,
  opDevnetConfig,
  preMergeGenesis,
} from './anvil-genesis.js';
export { ALERT_RULES, ALERT_TESTS, DASHBOARD, alertExpressions, dashboardQueries, metricNames } from './monitoring.js';
export { missingTools, toolPath } from './tools.js';
export { TOKEN_SOURCE, compileToken } from './token.js';
export { compiledContract, compileSolidity } from './solc.js';
export { withoutRecordedRows } from './recorded-rows.js';
export type { CompiledSolidity, SolidityInput } from './solc.js';
export { Mismatches } from './mismatches.js';
