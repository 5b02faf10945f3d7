// The runtime's one entry point without the CLI: runRuntime with a RuntimeConfig built in code
// (test/run-config.ts) serves the datadir on one thread and on two (the config crosses into the
// app threads as worker data), answers with a key made through its onLedger hook, and stops on
// SIGTERM with exit code 0, its log JSON lines naming their component. A datadir without a chain
// is refused with a RuntimeError, and nothing is served.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { openChainStore } from '@chainnode/store';
import { datadirCopy, tempDir } from '@chainnode/testkit';

const script = new URL('./run-config.js', import.meta.url);

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: string | null;
}

/** Runs the script; `whileUp` gets the first stdout line once it is printed, then SIGTERM is sent. */
function run(datadir: string, threads: number, whileUp?: (line: string) => Promise<void>): Promise<Run> {
  const proc = spawn(process.execPath, [script.pathname, datadir, String(threads)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let started = false;
  const timer = setTimeout(() => proc.kill('SIGKILL'), 120_000);
  return new Promise((resolve, reject) => {
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    proc.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      const nl = stdout.indexOf('\n');
      if (nl < 0 || started || whileUp === undefined) return;
      started = true;
      whileUp(stdout.slice(0, nl))
        .then(() => proc.kill('SIGTERM'))
        .catch((err: unknown) => {
          proc.kill('SIGKILL');
          reject(err);
        });
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, signal });
    });
  });
}

async function rpc(url: string, method: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { result: unknown }).result;
}

async function headOf(datadir: string): Promise<bigint> {
  const store = await openChainStore(datadir);
  try {
    return (await store.head()).number;
  } finally {
    await store.close();
  }
}

test.each([1, 2])('runRuntime with a config built in code serves and stops cleanly (%i threads)', async (threads) => {
  const { dir, cleanup } = await datadirCopy('fixtures');
  try {
    let answered: unknown;
    let key = '';
    const r = await run(dir, threads, async (line) => {
      const up = JSON.parse(line) as { port: number; key: string; ledger: string };
      expect(up.ledger).toBe('embedded');
      key = up.key;
      answered = await rpc(`http://127.0.0.1:${up.port}/v3/${up.key}`, 'eth_blockNumber');
    });
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    expect(answered).toBe(`0x${(await headOf(dir)).toString(16)}`);
    const recs = r.stderr
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const rec of recs) expect(typeof rec['component']).toBe('string');
    expect(recs.some((rec) => rec['component'] === 'serve' && rec['msg'] === 'stopped cleanly')).toBe(true);
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(r.stderr.includes(key)).toBe(false);
  } finally {
    await cleanup();
  }
});

test('a datadir without a chain is refused with a RuntimeError', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const missing = join(dir, 'missing');
    const r = await run(missing, 1);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain(`refused: datadir ${missing} holds no imported chain`);
  } finally {
    await cleanup();
  }
});
