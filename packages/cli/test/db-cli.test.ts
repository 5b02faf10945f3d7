// `node-cli db info|compact|convert`: the store's upkeep through the CLI. info prints the tables'
// sizes and the state layout (as JSON here), compact settles the datadir and says what it did,
// convert turns an archive into a trie window (and refuses a bad setting with one line), and all
// are refused with one line and exit code 1 while another process (this one) holds the datadir. The
// datadir's state trie setting (db info, and sync refusing another value for it).
import { openChainStore } from '@chainnode/store';
import { availableChains, chainDir, datadirCopy, runCli } from '@chainnode/testkit';

const chain = availableChains().includes('execution-apis') ? 'execution-apis' : 'fixtures';

test('db info and db compact: sizes and layout, a compacted datadir, refused while the datadir is held', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    const info = await runCli(['db', 'info', '--datadir', dir, '--json']);
    expect(info.code).toBe(0);
    const sizes = JSON.parse(info.stdout) as {
      head: string;
      layout: { stateHistory: boolean; trie: string; trieFrom?: string };
      tables: { table: string; rows: number }[];
      groups: { group: string }[];
    };
    expect(BigInt(sizes.head)).toBeGreaterThan(0n);
    expect(sizes.layout).toEqual({ stateHistory: true, trie: 'window=90000', trieFrom: '0' });
    expect(sizes.tables.find((t) => t.table === 'Canonical')?.rows).toBe(Number(sizes.head) + 1);
    expect(sizes.groups.map((g) => g.group)).toContain('state history');
    expect(info.stderr).toContain('db info: reading TrieNodes');
    const text = await runCli(['db', 'info', '--datadir', dir]);
    expect(text.stdout).toContain(
      "trie: window=90000 (the last blocks' nodes, complete from block 0; below it state from the flat history, no proofs)",
    );

    // The state trie's retention is fixed at creation: another value is refused in one line.
    const sync = (trie: string) =>
      runCli(['sync', '--from', chainDir(chain) as string, '--datadir', dir, '--state-trie', trie]);
    const other = await sync('archive');
    expect({ code: other.code, stderr: other.stderr }).toEqual({
      code: 1,
      stderr: `node-cli: --state-trie archive: datadir ${dir} keeps --state-trie window=90000 (fixed when it was created); leave the option out, or use another --datadir\n`,
    });
    const bad = await sync('window=0');
    expect(bad.stderr).toBe(
      'node-cli: --state-trie: expected "archive" or "window=<N>" with N a positive number of blocks, not "window=0"\n',
    );

    const compact = await runCli(['db', 'compact', '--datadir', dir]);
    expect(compact.code).toBe(0);
    expect(compact.stdout).toMatch(/^datadir .* compacted: [\d,]+ -> [\d,]+ bytes on disk\n$/);
    expect(compact.stderr).toContain('db compact: TrieNodes');

    const badConvert = await runCli(['db', 'convert', '--datadir', dir, '--state-trie', 'window=0']);
    expect({ code: badConvert.code, stdout: badConvert.stdout }).toEqual({ code: 1, stdout: '' });
    expect(badConvert.stderr).toMatch(/^node-cli: state trie: expected "archive" or "window=<N>"/);
    const convert = await runCli(['db', 'convert', '--datadir', dir, '--state-trie', 'window=16']);
    expect(convert.code).toBe(0);
    expect(convert.stdout).toMatch(
      new RegExp(
        `^datadir .* at block ${sizes.head} converted: flat state history already kept; state trie: window=90000 -> window=16; pruned: [\\d,]+ of [\\d,]+ nodes deleted, [\\d,]+ kept for blocks ${Number(sizes.head) - 15}-${sizes.head} \\(run db compact to return the freed space\\)\n$`,
      ),
    );
    expect(convert.stderr).toContain('db convert: state trie: done');

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
