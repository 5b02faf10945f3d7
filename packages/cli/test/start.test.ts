// `node-cli start` (README command one, `npm start`) as a child process: on a datadir that already
// holds the fixture chain it skips the import, creates the development key once (0600 file, hash
// in keys.json), serves, and prints HTTP/WebSocket URLs with that key and a curl example that
// works; a second start reuses the key; a revoked development key is replaced on the next start.
// With --log-format json, every line it writes (the import's progress and summary among them) is
// a JSON record.
import { statSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readRlpBlocks } from '@chainnode/ingest';
import { chainDir, datadirCopy, runCli, tempDir } from '@chainnode/testkit';
import { jsonRecords, rpc, sleep, spawnServing } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

const fixtures = chainDir('fixtures');
const t = fixtures === undefined ? test.skip : test;
if (fixtures === undefined) console.log('skipped: no fixtures/ chain');

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function start(dir: string): Promise<ServeProcess> {
  // The human banner (a terminal's default; stdout here is a pipe, whose default is JSON).
  const s = await spawnServing([
    'start',
    '--datadir',
    dir,
    '--from',
    fixtures as string,
    '--port',
    '0',
    '--log-format',
    'text',
  ]);
  cleanups.push(() => s.stop('SIGKILL'));
  // The banner follows the "listening" lines; wait for its last line.
  for (let i = 0; i < 200 && !s.output().includes('Ctrl-C stops the server'); i++) await sleep(50);
  return s;
}

/** The key, URLs and curl command the banner printed. */
function banner(out: string): { key: string; http: string; ws: string; curlData: string; curlUrl: string } {
  const http = /HTTP\s+(http:\/\/127\.0\.0\.1:\d+\/v3\/([0-9a-f]{32}))\s*$/m.exec(out);
  const ws = /WebSocket\s+(ws:\/\/127\.0\.0\.1:\d+\/ws\/v3\/[0-9a-f]{32})\s*$/m.exec(out);
  const curl = /curl -s -X POST -H 'content-type: application\/json' \\\n\s+--data '([^']+)' \\\n\s+(\S+)/.exec(out);
  if (!http || !ws || !curl) throw new Error(`banner not found in:\n${out}`);
  return {
    key: http[2] as string,
    http: http[1] as string,
    ws: ws[1] as string,
    curlData: curl[1] as string,
    curlUrl: curl[2] as string,
  };
}

t(
  'start on an imported datadir: development key once, URLs and a working curl example, key reused, a revoked one replaced',
  async () => {
    const copy = await datadirCopy('fixtures');
    cleanups.push(copy.cleanup);
    const dir = copy.dir;

    const first = await start(dir);
    const b1 = banner(first.output());
    expect(first.output()).toMatch(/Development key created/);
    expect(b1.ws).toBe(`ws://127.0.0.1:${first.port}/ws/v3/${b1.key}`);
    expect(b1.http).toBe(first.url(b1.key));
    expect(b1.curlUrl).toBe(b1.http);
    // The key file: the printed key, owner-only.
    const keyFile = join(dir, 'dev-api-key');
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(b1.key);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    // keys.json holds its hash, never the key itself.
    expect(readFileSync(join(dir, 'keys.json'), 'utf8')).not.toContain(b1.key);
    // The curl example's request, sent as printed, answers the head block.
    const res = await fetch(b1.curlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: b1.curlData,
    });
    expect(res.status).toBe(200);
    const head = ((await res.json()) as { result: { number: string; hash: string } }).result;
    const direct = await rpc(b1.http, 'eth_getBlockByNumber', [head.number, false]);
    expect((direct.body.result as { hash: string }).hash).toBe(head.hash);
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await start(dir);
    const b2 = banner(second.output());
    expect(second.output()).toMatch(/Development key reused/);
    expect(b2.key).toBe(b1.key);
    expect(await second.stop('SIGTERM')).toBe(0);

    const revoked = await runCli(['keys', 'revoke', b1.key, '--datadir', dir]);
    expect(revoked.code).toBe(0);
    const third = await start(dir);
    const b3 = banner(third.output());
    expect(third.output()).toMatch(/Development key created/);
    expect(b3.key).not.toBe(b1.key);
    expect((await rpc(b1.http.replace(String(first.port), String(third.port)), 'eth_blockNumber', [])).status).toBe(
      401,
    );
    expect((await rpc(b3.http, 'eth_blockNumber', [])).status).toBe(200);
    expect(await third.stop('SIGTERM')).toBe(0);
  },
  180_000,
);

/** A chain export in `dir`: the fixtures' genesis and their first `count` blocks. */
async function firstBlocks(dir: string, count: number): Promise<void> {
  const src = fixtures as string;
  await mkdir(dir, { recursive: true });
  await copyFile(join(src, 'genesis.json'), join(dir, 'genesis.json'));
  const blocks: Uint8Array[] = [];
  for await (const raw of readRlpBlocks(join(src, 'chain.rlp'))) {
    blocks.push(raw.bytes);
    if (blocks.length === count) break;
  }
  await writeFile(join(dir, 'chain.rlp'), Buffer.concat(blocks));
}

t(
  'start --log-format json: the import progress on stderr, its summary on stdout and every other line are JSON records',
  async () => {
    const temp = await tempDir('start-json-');
    cleanups.push(temp.cleanup);
    const from = join(temp.dir, 'export');
    await firstBlocks(from, 30);
    const data = join(temp.dir, 'data');
    const s = await spawnServing(['start', '--datadir', data, '--from', from, '--port', '0', '--log-format', 'json']);
    cleanups.push(() => s.stop('SIGKILL'));
    for (let i = 0; i < 200 && !s.stdout().includes('development key created'); i++) await sleep(50);
    expect(await s.stop('SIGTERM')).toBe(0);
    const out = jsonRecords(s.stdout());
    const err = jsonRecords(s.stderr());
    const ofSync = (records: Record<string, unknown>[]) => records.filter((r) => r['component'] === 'sync');
    // Progress: the first flushed group at once, then at most one line every 5 s.
    expect(ofSync(err).length).toBeGreaterThan(0);
    for (const r of ofSync(err))
      expect(r).toMatchObject({
        level: 'info',
        network: null,
        msg: 'importing',
        percent: expect.any(Number),
        block: expect.any(Number),
        blocks: expect.any(Number),
      });
    expect(ofSync(out).map((r) => r['msg'])).toEqual(['imported blocks', 'head']);
    expect(ofSync(out)[0]).toMatchObject({ from: 1, to: 30, blocks: 30 });
    expect(ofSync(out)[1]).toMatchObject({ head: 30, datadir: data });
    expect(out.map((r) => r['msg'])).toContain('development key created');
  },
  120_000,
);
