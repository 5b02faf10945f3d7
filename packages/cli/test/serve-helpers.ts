// Black-box helpers: run `node-cli serve` as a child process on a free port and talk to it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { openLedger } from '@chainnode/accounts';
import type { KeyManager } from '@chainnode/accounts';
import { loadConfig } from '@chainnode/runtime/configuration';
import { chainDir, cliBin, datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';

export interface ServeProcess {
  proc: ChildProcess;
  port: number;
  url: (key: string) => string;
  ws: (key: string) => string;
  base: string;
  /** stdout and stderr as they came. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
  /** Sends `signal` and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

// Every server these helpers start writes its log (JSON lines: stderr is a pipe) here, and every
// key and secret they create is remembered: after each test file, every line must parse with its
// level, time, component and network, and no key or secret may appear in any of them.
const logs: string[] = [];
const keyMaterial = new Set<string>();
afterAll(() => {
  // `node-cli: …` is the CLI's one-line refusal to start, not the log.
  const lines = logs.flatMap((l) => l.split('\n')).filter((l) => l !== '' && !l.startsWith('node-cli: '));
  for (const line of lines) {
    let rec: Record<string, unknown> | undefined;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      rec = undefined;
    }
    expect({ line, json: rec !== undefined }).toEqual({ line, json: true });
    for (const f of ['level', 'time', 'component', 'network', 'msg'])
      expect({ line, field: f, present: rec !== undefined && f in rec }).toEqual({ line, field: f, present: true });
  }
  const text = logs.join('');
  expect([...keyMaterial].filter((k) => text.includes(k))).toEqual([]);
});

/** Adds the stderr of a `serve` the test spawned itself to the lines checked after the file. */
export function watchLog(proc: ChildProcess): void {
  const at = logs.push('') - 1;
  proc.stderr?.on('data', (d: Buffer) => {
    logs[at] += d.toString('utf8');
  });
}

/**
 * `node-cli serve` on `datadir`, on a free port. One app thread unless `extra` names `--threads`:
 * the default (one per core) starts a thread per core in every server of every suite, and only
 * the suites whose subject is threads ask for more.
 */
export function spawnServe(
  datadir: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  const threads = extra.includes('--threads') ? [] : ['--threads', '1'];
  return spawnServing(['serve', '--datadir', datadir, '--port', '0', ...threads, ...extra], env);
}

/**
 * Runs a serving node-cli command (`serve`, `start`) and resolves once it listens. One that has
 * not listened within `startupMs` is killed (SIGKILL) and the promise rejects: a start that hangs
 * must not leave its process behind the test.
 */
export function spawnServing(
  args: string[],
  env: Record<string, string> = {},
  startupMs = 300_000,
): Promise<ServeProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [cliBin(), ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(proc);
    let out = '';
    let stdout = '';
    let stderr = '';
    // `start` also imports (progress on the terminal): only `serve`'s stderr is the log alone.
    const logAt = args[0] === 'serve' ? logs.push('') - 1 : -1;
    const exited = new Promise<number | null>((r) =>
      proc.on('exit', (code) => {
        live.delete(proc);
        r(code);
      }),
    );
    const startup = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`node-cli ${args[0]} did not listen within ${startupMs} ms; killed:\n${out}`));
    }, startupMs);
    void exited.then(() => clearTimeout(startup));
    const onData = (d: Buffer): void => {
      out += d.toString('utf8');
      stdout += d.toString('utf8');
      // The whole line: in the JSON log format it is the banner's one line, read whole by bannerOf.
      const m = /listening on 127\.0\.0\.1:(\d+).*\n/.exec(out);
      if (m) {
        clearTimeout(startup);
        const port = Number(m[1]);
        const base = `http://127.0.0.1:${port}`;
        resolve({
          proc,
          port,
          base,
          url: (key) => `${base}/v3/${key}`,
          ws: (key) => `ws://127.0.0.1:${port}/ws/v3/${key}`,
          output: () => out,
          stdout: () => stdout,
          stderr: () => stderr,
          stop: (signal = 'SIGTERM') => {
            proc.kill(signal);
            return exited;
          },
        });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      stderr += d.toString('utf8');
      if (logAt >= 0) logs[logAt] += d.toString('utf8');
    });
    void exited.then((code) => reject(new Error(`serve exited (${code}) before listening:\n${out}`)));
  });
}

/** The banner of a serve in the JSON log format: the fields of its one `listening on` line. */
export interface Banner {
  host: string;
  port: number;
  threads: number;
  ledger: 'embedded' | 'redis';
  ledgerFailure?: string;
  datadir: string;
  /** The URLs up to where the API key goes. */
  http: string;
  ws: string;
  health: string;
  metrics?: string;
  dashboard?: string;
  failover?: boolean;
  following?: string;
  reorgDepth?: number;
  networks?: { name: string; http: string; ws: string; datadir: string; default: boolean; following?: string }[];
}

/** The banner in `out` (a serve's output in the JSON log format); throws when there is none. */
export function bannerOf(out: string): Banner {
  for (const line of out.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"listening on ')) continue;
    const rec = JSON.parse(line) as Banner & { msg: string };
    if (rec.msg.startsWith('listening on ')) return rec;
  }
  throw new Error(`no banner line in:\n${out}`);
}

/** `f` on the KeyManager of `datadir`'s ledger (or the Redis one at `ledgerUrl`) with its server.json plans. */
async function withKeys<T>(
  datadir: string,
  ledgerUrl: string | undefined,
  f: (km: KeyManager) => Promise<T>,
): Promise<T> {
  const ledger = await openLedger({ ...(ledgerUrl !== undefined ? { url: ledgerUrl } : {}), datadir });
  try {
    return await f(ledger.manager(loadConfig(datadir)));
  } finally {
    await ledger.close();
  }
}

/**
 * A key for a test's setup: the action `node-cli keys create --plan <plan> [extra]` runs (KeyManager.create
 * over the datadir's ledger, or the Redis one `--ledger` names, with the plans of <datadir>/server.json),
 * in this process: a child CLI costs about a CPU-second of module loading per key. The CLI command
 * itself is tested by keys-cli.test.ts. `extra` takes --ledger, --networks, --daily-credits and
 * --credits-per-second.
 */
export async function createKeyCli(
  datadir: string,
  plan: string,
  extra: string[] = [],
): Promise<{ key: string; id: string }> {
  const flags = new Map<string, string>();
  for (let i = 0; i < extra.length; i += 2) {
    const [flag, value] = [extra[i]!, extra[i + 1]];
    if (!KEY_FLAGS.includes(flag) || value === undefined) throw new Error(`createKeyCli: unsupported ${flag}`);
    flags.set(flag, value);
  }
  const number = (flag: string): number | undefined => (flags.has(flag) ? Number(flags.get(flag)) : undefined);
  const { key, view } = await withKeys(datadir, flags.get('--ledger'), (km) =>
    km.create({
      name: `key created ${new Date().toISOString().slice(0, 10)}`,
      plan,
      networks: flags.get('--networks')?.split(','),
      dailyCredits: number('--daily-credits'),
      creditsPerSecond: number('--credits-per-second'),
    }),
  );
  keyMaterial.add(key);
  return { key, id: view.id };
}
const KEY_FLAGS = ['--ledger', '--networks', '--daily-credits', '--credits-per-second'];

/** What `node-cli keys usage <key> --json` reads (in this process, like createKeyCli; keys-cli.test.ts runs the command). */
export async function usageCli(datadir: string, key: string): Promise<KeyUsageJson> {
  const [view, u] = await withKeys(datadir, undefined, async (km) => [await km.get(key), await km.usage(key)] as const);
  const { dailyCredits, used, remaining, resetsAt, byNetwork } = u.balance;
  return {
    plan: view.plan,
    networks: view.networks,
    dailyCredits,
    used,
    remaining,
    resetsAt,
    byNetwork,
    methods: u.methods,
  };
}

/**
 * What `keys usage --json` prints that the tests read: the key's networks, today's balance and its
 * split by network, and the methods of 30 days.
 */
export interface KeyUsageJson {
  plan: string;
  networks: string[] | null;
  dailyCredits: number;
  used: number;
  remaining: number;
  resetsAt: string;
  byNetwork: Record<string, number>;
  methods: { method: string; calls: number; credits: number }[];
}

export interface Envelope {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

export async function rpc(
  url: string,
  method: string,
  params: unknown[],
  id = 1,
): Promise<{ status: number; body: Envelope }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  return { status: res.status, body: (await res.json()) as Envelope };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The value of the series `name` (a family, or a family with its labels) in the exposition at
 * `url`: its first line; 0 when absent.
 */
export async function metricValue(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** The chain these tests serve: the fixtures when present, else the execution-apis chain. */
export const TEST_CHAIN: ChainName = chainDir('fixtures') !== undefined ? 'fixtures' : 'execution-apis';

/**
 * Per-test cleanups, run in reverse after each test of the calling file, and `copy()`: a private
 * copy of TEST_CHAIN's imported datadir, removed after the test. Call once at a test file's top.
 */
export function perTest(): { cleanups: (() => Promise<unknown>)[]; copy: () => Promise<string> } {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });
  const copy = async (): Promise<string> => {
    const c = await datadirCopy(TEST_CHAIN);
    cleanups.push(c.cleanup);
    return c.dir;
  };
  return { cleanups, copy };
}

/** `made` (a datadir copy, a temporary directory) once ready, its cleanup queued on `cleanups`. */
export async function kept<T extends { cleanup: () => Promise<void> }>(
  cleanups: (() => Promise<unknown>)[],
  made: Promise<T>,
): Promise<T> {
  const m = await made;
  cleanups.push(m.cleanup);
  return m;
}

/**
 * A service a test runs beside its servers (nginx, prometheus): spawned with its stderr kept,
 * stopped by `cleanups` (SIGTERM, awaited), and resolved once `ready()` holds. One that exits, or
 * is not ready after `tries` probes 100 ms apart, fails the test with its stderr.
 */
export async function startService(
  name: string,
  command: string,
  args: string[],
  cleanups: (() => Promise<unknown>)[],
  ready: () => Promise<boolean>,
  tries: number,
): Promise<ChildProcess> {
  const proc = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  cleanups.push(async () => {
    proc.kill('SIGTERM');
    await exited;
  });
  for (let i = 0; ; i++) {
    if (await ready()) return proc;
    if (i > tries || proc.exitCode !== null) throw new Error(`${name} did not start:\n${log}`);
    await sleep(100);
  }
}

/**
 * The lines of a stream written in the JSON log format, each parsed; a line that is not a JSON
 * record with a string `level` and `msg` fails the test, naming the line.
 */
export function jsonRecords(stream: string): Record<string, unknown>[] {
  return stream
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      let rec: unknown;
      try {
        rec = JSON.parse(line);
      } catch {
        rec = undefined;
      }
      expect({
        line,
        level: typeof (rec as { level?: unknown })?.level,
        msg: typeof (rec as { msg?: unknown })?.msg,
      }).toEqual({ line, level: 'string', msg: 'string' });
      return rec as Record<string, unknown>;
    });
}
