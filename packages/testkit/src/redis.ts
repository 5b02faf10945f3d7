// A private redis-server for a test: Debian's binary on a free loopback port, persistence off
// unless asked for, stopped by the test (and killed on exit as a last resort). On a machine
// without redis-server, redisServerPath() is undefined and the Redis tests log one line and skip.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/**
 * Path of redis-server (REDIS_SERVER, PATH, /usr/bin, /usr/sbin), or undefined when not installed.
 * REDIS_SERVER=none behaves as a machine without it (to check that the suite still runs).
 */
export function redisServerPath(): string | undefined {
  const env = process.env['REDIS_SERVER'];
  if (env === 'none') return undefined;
  if (env !== undefined && existsSync(env)) return env;
  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const found = which.stdout.trim();
  if (which.status === 0 && found !== '') return found;
  for (const p of ['/usr/bin/redis-server', '/usr/sbin/redis-server', '/usr/local/bin/redis-server'])
    if (existsSync(p)) return p;
  return undefined;
}

/** The one line a Redis test logs when it skips. */
export const NO_REDIS =
  'redis-server not installed: Redis ledger tests skipped (install it: apt-get install redis-server, or run .ci/run)';

/**
 * A port free on 127.0.0.1 for a process a test starts (anvil, Redis, a node on an explicit port),
 * drawn below the kernel's ephemeral range (32768 and up): a port the kernel handed out for a
 * bind to port 0 could be handed to any outgoing connection of the busy machine (the tests run
 * hundreds) before the process binds it; a port below that range is taken only by an explicit bind.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  /** Stops it: SIGTERM (a clean shutdown; with `persist` it writes its data) or SIGKILL. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and directory (after stop). */
  restart(): Promise<void>;
  /** Removes its directory (after stop). */
  cleanup(): Promise<void>;
}

function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.write('PING\r\n');
        sock.once('data', (d) => {
          sock.destroy();
          if (d.toString().startsWith('+PONG')) resolve();
          else retry();
        });
      });
      sock.once('error', () => {
        sock.destroy();
        retry();
      });
    };
    const retry = (): void => {
      if (Date.now() - t0 > timeoutMs) reject(new Error(`redis-server did not answer on port ${port}`));
      else setTimeout(attempt, 30);
    };
    attempt();
  });
}

/**
 * Starts redis-server on a free loopback port. `persist`: append-only file with fsync on every
 * write (for tests that stop and restart Redis and expect its data back); otherwise
 * `--save '' --appendonly no`.
 */
export async function startRedis(opts: { persist?: boolean } = {}): Promise<RedisProcess> {
  const bin = redisServerPath();
  if (bin === undefined) throw new Error(NO_REDIS);
  const dir = await mkdtemp(join(tmpdir(), 'chainnode-redis-'));
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
    '--loglevel',
    'warning',
  ];
  if (opts.persist) args.push('--appendonly', 'yes', '--appendfsync', 'always');
  else args.push('--appendonly', 'no');
  let proc: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    proc = p;
    live.add(p);
    p.on('exit', () => live.delete(p));
    await waitForPort(port, 10_000);
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: async (signal = 'SIGTERM') => {
      const p = proc;
      if (p === undefined || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill(signal);
      await exited;
    },
    restart: launch,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
