// CLI parity with the dashboard: every key action through `node-cli keys …` (the same
// KeyManager), and `node-cli admin token create`. These commands never open the chain store.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir } from '@chainnode/testkit';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

test('keys: create (name, networks, limits), list with the key prefix, show, rename, limits, networks, allowlist, secret, rotate, usage, revoke', async () => {
  const t = await tempDir('chainnode-keys-cli-');
  const d = ['--datadir', t.dir];
  const cli = async (...args: string[]): Promise<unknown> => {
    const r = await runCli([...args, '--json', ...d]);
    if (r.code !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as unknown;
  };
  try {
    const c = (await cli(
      'keys',
      'create',
      '--plan',
      'developer',
      '--name',
      'indexer',
      '--networks',
      'mainnet,sepolia',
      '--limit-per-day',
      '5000',
      '--limit-per-second',
      '100',
    )) as { key: string; id: string; prefix: string };
    expect(c.key).toMatch(/^[0-9a-f]{32}$/);
    expect(c.prefix).toBe(c.key.slice(0, 6));
    const file = readFileSync(join(t.dir, 'keys.json'), 'utf8');
    expect(file).toContain(sha(c.key));
    expect(file).not.toContain(c.key);

    const list = await runCli(['keys', 'list', ...d]);
    expect(list.stdout).toContain(`${c.key.slice(0, 6)}…`);
    expect(list.stdout).toContain('indexer');
    expect(list.stdout).not.toContain(c.key);
    expect(await cli('keys', 'show', c.id)).toMatchObject({
      name: 'indexer',
      plan: 'developer',
      networks: ['mainnet', 'sepolia'],
      limits: { creditsPerDay: 5000, creditsPerSecond: 100 },
    });

    expect(await cli('keys', 'rename', c.id, 'indexer v2')).toMatchObject({ name: 'indexer v2' });
    expect(await cli('keys', 'limits', c.id, '--per-day', '0')).toMatchObject({
      limits: { creditsPerDay: null, creditsPerSecond: 100 },
    });
    expect(await cli('keys', 'networks', c.id, 'all')).toMatchObject({ networks: null });
    expect(
      await cli(
        'keys',
        'allowlist',
        c.id,
        '--origins',
        'https://*.example.com',
        '--methods',
        'eth_blockNumber,eth_getLogs',
      ),
    ).toEqual({
      addresses: [],
      userAgents: [],
      origins: ['https://*.example.com'],
      methods: ['eth_blockNumber', 'eth_getLogs'],
    });
    // Invalid input: one line, exit 1, nothing changed.
    const bad = await runCli(['keys', 'allowlist', c.id, '--addresses', '0x1234', ...d]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^node-cli: allowlists: addresses: "0x1234" is not a 0x-prefixed 20-byte hex address\n$/,
    );

    const sec = (await cli('keys', 'secret', 'create', c.id)) as { secret: string };
    expect(readFileSync(join(t.dir, 'keys.json'), 'utf8')).toContain(sha(sec.secret));
    expect(await cli('keys', 'secret', 'require', c.id)).toEqual({ set: true, required: true });
    expect(await cli('keys', 'secret', 'optional', c.id)).toEqual({ set: true, required: false });
    expect(await cli('keys', 'secret', 'delete', c.id)).toEqual({ set: false, required: false });

    const rot = (await cli('keys', 'rotate', c.id)) as { key: string; id: string; prefix: string };
    expect(rot.id).toBe(c.id);
    expect(rot.key).not.toBe(c.key);
    // The old value no longer finds the key; the new one does.
    expect((await runCli(['keys', 'show', c.key, ...d])).code).toBe(1);
    expect(await cli('keys', 'show', rot.key)).toMatchObject({ id: c.id, prefix: rot.key.slice(0, 6) });

    const u = (await cli('keys', 'usage', c.id)) as {
      dailyCredits: number;
      used: number;
      days: unknown[];
      minutes: unknown[];
      methods: unknown[];
    };
    expect(u).toMatchObject({ dailyCredits: 15_000_000, used: 0 });
    expect(u.days).toHaveLength(30);
    expect(u.minutes).toHaveLength(16);

    expect(await cli('keys', 'revoke', c.id)).toMatchObject({ id: c.id });
    expect(await cli('keys', 'show', c.id)).toMatchObject({ status: 'revoked' });
    expect((await runCli(['keys', 'rename', c.id, 'x', ...d])).stderr).toMatch(/revoked/);
  } finally {
    await t.cleanup();
  }
});

test('admin token create: printed once, stored hashed, refused a second time unless --replace', async () => {
  const t = await tempDir('chainnode-admin-cli-');
  try {
    const r = await runCli(['admin', 'token', 'create', '--datadir', t.dir]);
    expect(r.code).toBe(0);
    const token = r.stdout.trim();
    expect(token).toMatch(/^cna_[A-Za-z0-9_-]{43}$/);
    const stored = readFileSync(join(t.dir, 'admin.json'), 'utf8');
    expect(stored).toContain(sha(token));
    expect(stored).not.toContain(token);
    const again = await runCli(['admin', 'token', 'create', '--datadir', t.dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists already/);
    const replaced = await runCli(['admin', 'token', 'create', '--replace', '--datadir', t.dir]);
    expect(replaced.code).toBe(0);
    expect(replaced.stdout.trim()).not.toBe(token);
  } finally {
    await t.cleanup();
  }
});
