// `node-cli db info|compact`: the store's upkeep through the CLI. info prints the tables' sizes and
// the state layout (as JSON here), compact settles the datadir and says what it did, and both are
// refused with one line and exit code 1 while another process (this one) holds the datadir.
import { openChainStore } from '@chainnode/store';
import { availableChains, datadirCopy, runCli } from '@chainnode/testkit';

const chain = availableChains().includes('execution-apis') ? 'execution-apis' : 'fixtures';

test('db info and db compact: sizes and layout, a compacted datadir, refused while the datadir is held', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    const info = await runCli(['db', 'info', '--datadir', dir, '--json']);
    expect(info.code).toBe(0);
    const sizes = JSON.parse(info.stdout) as {
      head: string;
      layout: { stateHistory: boolean; trie: string };
      tables: { table: string; rows: number }[];
      groups: { group: string }[];
    };
    expect(BigInt(sizes.head)).toBeGreaterThan(0n);
    expect(sizes.layout).toEqual({ stateHistory: true, trie: 'archive' });
    expect(sizes.tables.find((t) => t.table === 'Canonical')?.rows).toBe(Number(sizes.head) + 1);
    expect(sizes.groups.map((g) => g.group)).toContain('state history');
    expect(info.stderr).toContain('db info: reading TrieNodes');

    const compact = await runCli(['db', 'compact', '--datadir', dir]);
    expect(compact.code).toBe(0);
    expect(compact.stdout).toMatch(/^datadir .* compacted: [\d,]+ -> [\d,]+ bytes on disk\n$/);
    expect(compact.stderr).toContain('db compact: TrieNodes');

    const held = await openChainStore(dir);
    try {
      const r = await runCli(['db', 'compact', '--datadir', dir]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
      expect(r.stderr).toBe(
        `node-cli: datadir ${dir} is in use by another process (stop the server or sync using it first)\n`,
      );
    } finally {
      await held.close();
    }
  } finally {
    await cleanup();
  }
});
