// server.json's safeDepth and finalizedDepth reach the rpc service of `node-cli serve`: the `safe`
// and `finalized` tags answer head minus the configured depth, and a bad value stops serve with
// the field named.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '@chainnode/testkit';
import { createKeyCli, rpc, spawnServe, perTest } from './serve-helpers.js';

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
