// The datadir's upkeep (upkeep/): measureDatadir's rows and bytes per table equal a brute-force
// count of every key by its prefix byte; compactDatadir leaves every row as it was (the digest)
// while the size on disk drops to what the rows take (rows written and deleted, a crashed seal's
// segment bytes), cuts the log segment files to their recorded length, and is refused while the
// datadir is open elsewhere. On the smallest prepared chain (a copy of it).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { availableChains, datadirCopy, tempDir } from '@chainnode/testkit';
import { DatadirEmptyError, DatadirInUseError, openDb } from '../src/db.js';
import { digestDatadir } from '../src/digest.js';
import { MetaKey, Prefix, headCodec, tables } from '../src/schema/index.js';
import { compactDatadir, measureDatadir } from '../src/upkeep/index.js';

const chain = availableChains().includes('execution-apis') ? 'execution-apis' : 'fixtures';

test('db info: rows and bytes per table equal a brute-force count by prefix; the state layout', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    const sizes = await measureDatadir(dir);
    const brute = new Map<number, { rows: number; keyBytes: number; valueBytes: number }>();
    const db = await openDb(dir, { create: false });
    let head: bigint;
    try {
      for await (const [k, v] of db.iterator()) {
        const c = brute.get(k[0] as number) ?? { rows: 0, keyBytes: 0, valueBytes: 0 };
        c.rows++;
        c.keyBytes += k.length;
        c.valueBytes += v.length;
        brute.set(k[0] as number, c);
      }
      head = headCodec.decode((await tables.meta.get(db, MetaKey.Head)) as Uint8Array).number;
    } finally {
      await db.close();
    }
    const known = new Set<number>(Object.values(Prefix));
    expect([...brute.keys()].filter((p) => !known.has(p))).toEqual([]);
    expect(sizes.tables.map((t) => t.prefix).sort((a, b) => a - b)).toEqual([...known].sort((a, b) => a - b));
    for (const t of sizes.tables)
      expect({ table: t.table, rows: t.rows, keyBytes: t.keyBytes, valueBytes: t.valueBytes }).toEqual({
        table: t.table,
        ...(brute.get(t.prefix) ?? { rows: 0, keyBytes: 0, valueBytes: 0 }),
      });
    const kv = sizes.tables.reduce((s, t) => s + t.keyBytes + t.valueBytes, 0);
    expect(sizes.groups.reduce((s, g) => s + g.keyValueBytes, 0)).toBe(kv + sizes.segmentBytes);
    expect(sizes.groups.find((g) => g.group === 'state history')?.keyValueBytes).toBeGreaterThan(0);
    expect(sizes.head).toBe(head);
    expect(sizes.layout).toEqual({ stateHistory: true, trie: 'window=90000', trieFrom: 0n });
    expect(sizes.totalBytes).toBeGreaterThan(0);
  } finally {
    await cleanup();
  }
});

test('db compact: the same rows, fewer bytes; a crashed seal cut off; refused while the datadir is open', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    // 8 MB of rows written and deleted again (LevelDB keeps them and their tombstones until
    // compaction), and a segment file that no Meta.logSegments names (a crashed first seal's).
    const db = await openDb(dir, { create: false });
    try {
      const junk = (i: number) => Uint8Array.of(0x7f, i >> 8, i & 0xff);
      const value = randomBytes(8192); // incompressible
      await db.batch(Array.from({ length: 1000 }, (_, i) => ({ type: 'put' as const, key: junk(i), value })));
      await db.batch(Array.from({ length: 1000 }, (_, i) => ({ type: 'del' as const, key: junk(i) })));
    } finally {
      await db.close();
    }
    const seg = join(dir, 'log-segments', '000000.seg');
    await mkdir(join(dir, 'log-segments'), { recursive: true });
    await writeFile(seg, 'x'.repeat(4096));

    const before = await digestDatadir(dir);
    const held = await openDb(dir, { create: false });
    try {
      await expect(compactDatadir(dir)).rejects.toBeInstanceOf(DatadirInUseError);
    } finally {
      await held.close();
    }
    const steps: string[] = [];
    const r = await compactDatadir(dir, { onProgress: (step) => steps.push(step) });
    expect(await digestDatadir(dir)).toEqual(before);
    expect(steps).toContain('TrieNodes');
    expect(r.segments).toEqual({ truncatedBytes: 4096, removedFiles: 1 });
    expect(existsSync(seg)).toBe(false);
    // The 8 MB of deleted rows are gone from disk.
    expect(r.bytesBefore - r.bytesAfter).toBeGreaterThan(8_000_000);
    const sizes = await measureDatadir(dir);
    const disk = sizes.tables.reduce((s, t) => s + t.diskBytes, 0);
    expect(disk).toBeLessThanOrEqual(r.bytesAfter);
  } finally {
    await cleanup();
  }
});

test('db compact: segment files cut to the length Meta.logSegments records, later files removed', async () => {
  const { dir, cleanup } = await tempDir('chainnode-compact-');
  try {
    const db = await openDb(dir, { create: true });
    try {
      // from(8) ++ to(8) ++ file(4) ++ fileLength(8): spans [0, 256) sealed, file 1 ends at 10.
      const state = new Uint8Array(28);
      const v = new DataView(state.buffer);
      v.setUint32(4, 0);
      v.setUint32(12, 256);
      v.setUint32(16, 1);
      v.setUint32(24, 10);
      await db.put(tables.meta.key(MetaKey.LogSegments), state);
    } finally {
      await db.close();
    }
    const segDir = join(dir, 'log-segments');
    await mkdir(segDir);
    await writeFile(join(segDir, '000000.seg'), 'a'.repeat(20));
    await writeFile(join(segDir, '000001.seg'), 'b'.repeat(30));
    await writeFile(join(segDir, '000002.seg'), 'c'.repeat(5));
    const r = await compactDatadir(dir);
    expect(r.segments).toEqual({ truncatedBytes: 25, removedFiles: 1 });
    expect(await readFile(join(segDir, '000000.seg'), 'utf8')).toBe('a'.repeat(20));
    expect((await stat(join(segDir, '000001.seg'))).size).toBe(10);
    expect(existsSync(join(segDir, '000002.seg'))).toBe(false);
    await expect(compactDatadir(join(dir, 'none'))).rejects.toBeInstanceOf(DatadirEmptyError);
  } finally {
    await cleanup();
  }
});
