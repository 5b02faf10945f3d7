// SIGTERM at any moment of `serve --threads 2`'s startup stops it cleanly: exit 0 after
// "stopped cleanly", never death by the signal's default action. The moments are read from the
// process itself (Linux /proc), not guessed with delays: while its modules load (uWS's native
// addon is mapped), once it holds the datadir (chain/LOCK, LevelDB's, open), and right after the first
// `GET /health` 200, the moment a load balancer starts routing to it (and a scheduler may stop it).
import { spawn } from 'node:child_process';
import { readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { cliBin, freePort } from '@chainnode/testkit';
import { perTest, sleep, watchLog } from './serve-helpers.js';

const { cleanups, copy } = perTest();

type Moment = 'modules loading' | 'datadir held' | 'first /health 200';

async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function holdsFile(pid: number, path: string): Promise<boolean> {
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
  for (const fd of fds) if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === path) return true;
  return false;
}

async function reached(moment: Moment, pid: number, dir: string, port: number): Promise<boolean> {
  if (moment === 'modules loading')
    return (await readFile(`/proc/${pid}/maps`, 'utf8').catch(() => '')).includes('uws_');
  if (moment === 'datadir held') return holdsFile(pid, join(dir, 'chain', 'LOCK'));
  return healthy(port);
}

/** Starts serve, sends SIGTERM at `moment`, resolves with the exit code, the signal and the output. */
async function termAt(moment: Moment): Promise<{ code: number | null; signal: string | null; out: string }> {
  const dir = await copy();
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [cliBin(), 'serve', '--datadir', dir, '--port', String(port), '--threads', '2'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  watchLog(proc);
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) =>
    proc.on('exit', (code, signal) => r({ code, signal })),
  );
  let done = false;
  void exited.then(() => (done = true));
  cleanups.push(async () => {
    if (!done) proc.kill('SIGKILL');
    await exited;
  });
  const pid = proc.pid as number;
  const deadline = Date.now() + 120_000;
  while (!done && !(await reached(moment, pid, dir, port))) {
    if (Date.now() > deadline) throw new Error(`serve never reached "${moment}":\n${out}`);
    await sleep(moment === 'first /health 200' ? 5 : 2);
  }
  if (done) throw new Error(`serve exited before "${moment}":\n${out}`);
  proc.kill('SIGTERM');
  const r = await exited;
  return { ...r, out };
}

test.each<Moment>(['modules loading', 'datadir held', 'first /health 200'])(
  'serve --threads 2: SIGTERM at "%s" exits 0 after a clean stop',
  async (moment) => {
    const r = await termAt(moment);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    expect(r.out).toContain('stopped cleanly');
    expect(r.out).not.toContain('exiting now');
  },
);
