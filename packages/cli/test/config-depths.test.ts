// server.json reaches `node-cli serve`: its safeDepth and finalizedDepth the rpc service (the
// `safe` and `finalized` tags answer head minus the configured depth), its flag fields the process
// (the file over the default, a flag over the file); a bad value stops serve with the field named.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { METHODS } from '@chainnode/rpc';
import { runCli } from '@chainnode/testkit';
import { bannerOf, createKeyCli, rpc, spawnServe, perTest } from './serve-helpers.js';

const { cleanups, copy } = perTest();

test('server.json safeDepth / finalizedDepth decide the blocks `safe` and `finalized` resolve to', async () => {
  const dir = await copy();
  await writeFile(join(dir, 'server.json'), JSON.stringify({ safeDepth: 3, finalizedDepth: 10 }));
  const { key } = await createKeyCli(dir, 'team');
  const s = await spawnServe(dir);
  cleanups.push(() => s.stop('SIGKILL'));
  const numberOf = async (tag: string): Promise<bigint> => {
    const r = await rpc(s.url(key), 'eth_getBlockByNumber', [tag, false]);
    expect(r.body.error).toBeUndefined();
    return BigInt((r.body.result as { number: string }).number);
  };
  const head = await numberOf('latest');
  expect(head).toBeGreaterThan(10n);
  expect(await numberOf('safe')).toBe(head - 3n);
  expect(await numberOf('finalized')).toBe(head - 10n);
});

test('a bad safeDepth or finalizedDepth in server.json: serve refuses to start, naming the field', async () => {
  const dir = await copy();
  for (const [config, message] of [
    [{ safeDepth: -1 }, 'safeDepth: expected a non-negative integer, got -1'],
    [{ finalizedDepth: 'deep' }, 'finalizedDepth: expected a non-negative integer, got "deep"'],
  ] as const) {
    const file = join(dir, 'server.json');
    await writeFile(file, JSON.stringify(config));
    const r = await runCli(['serve', '--datadir', dir, '--port', '0'], { timeoutMs: 60_000 });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`node-cli: ${file}: ${message}`);
  }
});

test('server.json sets the flags of serve too: the file over the default, a flag over the file', async () => {
  const dir = await copy();
  await writeFile(join(dir, 'server.json'), JSON.stringify({ logLevel: 'error', accessLog: true, threads: 1 }));
  const { key, id } = await createKeyCli(dir, 'team');
  const records = (output: string): Record<string, unknown>[] =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  // The file's logLevel "error" over the default "info": a start, a call and a stop write nothing
  // but the banner (one info line, written whatever the level, as the text banner is).
  const quiet = await spawnServe(dir);
  cleanups.push(() => quiet.stop('SIGKILL'));
  expect((await rpc(quiet.url(key), 'eth_blockNumber', [])).body.error).toBeUndefined();
  expect(await quiet.stop()).toBe(0);
  const banner = bannerOf(quiet.output());
  expect(records(quiet.output())).toEqual([
    expect.objectContaining({ level: 'info', msg: `listening on ${banner.host}:${banner.port}` }),
  ]);
  // --log-level info over the file: the info records are back, and the file's accessLog writes one
  // record for the call.
  const loud = await spawnServe(dir, ['--log-level', 'info']);
  cleanups.push(() => loud.stop('SIGKILL'));
  expect((await rpc(loud.url(key), 'eth_blockNumber', [])).body.error).toBeUndefined();
  expect(await loud.stop()).toBe(0);
  const recs = records(loud.output());
  expect(recs.filter((r) => r['level'] === 'info' && r['component'] === 'serve').length).toBeGreaterThan(0);
  expect(recs.filter((r) => r['component'] === 'access')).toEqual([
    expect.objectContaining({
      level: 'info',
      msg: 'eth_blockNumber',
      method: 'eth_blockNumber',
      keyId: id,
      outcome: 'ok',
      credits: METHODS.eth_blockNumber.cost,
    }),
  ]);
});
