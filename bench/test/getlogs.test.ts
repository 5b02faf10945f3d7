// CI run of the getLogs benchmark at smoke size. Never asserts timings: it checks that the index
// answers equal the bloom-scan answers and a brute-force filter over the logs the generator made,
// and that `--json` carries every figure under its stable name. The chain is built once (the
// bench's own builder, keeping the generated logs for the brute force); the `--smoke --json` run
// reuses it through `--datadir`, the bench's reuse path, so its figures are of that build.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bytesEqual } from '@chainnode/core';
import type { LogQuery, LogQueryResult } from '@chainnode/core';
import { LevelChainStore } from '@chainnode/store';
import { tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { MAX_RESULTS, QUERY_NAMES, logChainBuilder, queryCases } from '../src/getlogs-run.js';
import { chainSpec } from '../src/synth.js';
import type { ChainFacts, GeneratedLog } from '../src/synth.js';

const benchDist = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function matches(g: GeneratedLog, q: LogQuery): boolean {
  const n = BigInt(g.blockNumber);
  if (n < q.fromBlock || n > q.toBlock) return false;
  if (q.addresses.length > 0 && !q.addresses.some((a) => bytesEqual(a, g.address))) return false;
  if (q.topics.length > g.topics.length) return false; // geth: fewer topics than positions never matches
  return q.topics.every(
    (t, i) =>
      t === null ||
      t.length === 0 ||
      (g.topics[i] !== undefined && t.some((x) => bytesEqual(x, g.topics[i] as Uint8Array))),
  );
}

/** The answer a correct getLogs gives, from the generated logs alone. */
function bruteForce(all: GeneratedLog[], q: LogQuery, limit: number): string {
  const want = all.filter((g) => matches(g, q));
  if (want.length > limit) return `too-many:${BigInt((want[limit] as GeneratedLog).blockNumber) - 1n}`;
  return want.map((g) => `${g.blockNumber}:${g.logIndex}`).join(',');
}

function key(r: LogQueryResult): string {
  return r.kind === 'too-many'
    ? `too-many:${r.lastFittingBlock}`
    : r.logs.map((l) => `${l.blockNumber}:${l.logIndex}`).join(',');
}

describe('getLogs bench at smoke size', () => {
  let tmp: TempDir;
  let facts: ChainFacts;
  beforeAll(async () => {
    tmp = await tempDir('bench-getlogs-test-');
    facts = await logChainBuilder.build({ spec: chainSpec('smoke'), keepLogs: true }, join(tmp.dir, 'data'), () => {});
  });
  afterAll(() => tmp.cleanup());

  test('every query of the mix: index = bloom scan = brute force over the generated logs', async () => {
    const all = facts.generated as GeneratedLog[];
    expect(all.length).toBe(facts.logs);
    const store = await LevelChainStore.open(join(tmp.dir, 'data'));
    try {
      const seen = new Set<string>();
      let tooMany = 0;
      for (const c of queryCases(facts, true)) {
        for (let i = 0; i < 3; i++) {
          const q = c.make(i);
          const opts = () => ({ limit: MAX_RESULTS, deadline: Date.now() + 60_000 });
          const want = bruteForce(all, q, MAX_RESULTS);
          expect(key(await store.logs(q, opts()))).toBe(want);
          expect(key(await store.logsByBloomScan(q, opts()))).toBe(want);
          if (want.startsWith('too-many')) tooMany++;
        }
        seen.add(c.name);
      }
      expect([...seen]).toEqual([...QUERY_NAMES]);
      expect(tooMany).toBeGreaterThanOrEqual(3); // (h) trips the cap at smoke size too
    } finally {
      await store.close();
    }
  });

  test('--smoke --json writes every figure under its stable name', async () => {
    const out = join(tmp.dir, 'smoke.json');
    const res = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      execFile(
        process.execPath,
        [join(benchDist, 'getlogs.js'), '--smoke', '--json', out, '--datadir', join(tmp.dir, 'data')],
        { timeout: 300_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          done({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout, stderr }),
      );
    });
    expect(res.stderr).not.toMatch(/MISMATCH/);
    expect(res.stderr).toContain(`reusing ${join(tmp.dir, 'data')} (${facts.head} blocks, ${facts.logs} logs)`);
    // The bench's own error, when it stopped, is the message.
    if (res.code !== 0) throw new Error(`the bench exited ${res.code}:\n${res.stderr.slice(-4000)}`);
    expect(res.stdout).toMatch(/\| query \| results \| index p50 ms/);
    const j = JSON.parse(await readFile(out, 'utf8')) as Record<string, unknown> & {
      queries: Record<string, Record<string, unknown>>;
      concurrency: Record<string, unknown> | null;
    };
    const num = (x: unknown) => expect(typeof x === 'number' && Number.isFinite(x)).toBe(true);
    expect(j.schema).toBe('getlogs-bench/1');
    expect(j.mismatches).toBe(0);
    for (const k of [
      'blocks',
      'logs',
      'txs',
      'indexedValues',
      'tailContracts',
      'holders',
      'hottestShare',
      'transferShare',
    ])
      num((j.chain as Record<string, unknown>)[k]);
    for (const k of ['seconds', 'writeSeconds', 'generateSeconds', 'logsPerSecWriter', 'logsPerSecTotal'])
      num((j.ingest as Record<string, unknown>)[k]);
    for (const k of [
      'entries',
      'keyValueBytes',
      'diskBytesAfterCompaction',
      'bytesPerValueKeyValue',
      'bytesPerValueDisk',
    ])
      num((j.index as Record<string, unknown>)[k]);
    expect(Object.keys(j.queries)).toEqual([...QUERY_NAMES]);
    for (const name of QUERY_NAMES) {
      const q = j.queries[name] as Record<string, Record<string, unknown>>;
      num(q.ratioP50);
      for (const side of ['index', 'bloomScan'])
        for (const k of ['runs', 'p50', 'p99', 'qps', 'meanResults', 'tooMany'])
          num((q[side] as Record<string, unknown>)[k]);
    }
    expect((j.queries.h_cap_error_full!.index as { tooMany: number }).tooMany).toBeGreaterThan(0);
    // The server probe (needs packages/cli built, as `npm test` does).
    const c = j.concurrency as Record<string, unknown>;
    expect(c).not.toBeNull();
    for (const k of ['getLogsWorkers', 'getLogsCompleted', 'getLogsCapErrors', 'getLogsOtherErrors', 'getLogsP50'])
      num(c[k]);
    for (const k of ['blockByNumberIdle', 'blockByNumberUnderLoad'])
      for (const f of ['calls', 'p50', 'p99']) num((c[k] as Record<string, unknown>)[f]);
    expect(c.getLogsOtherErrors).toBe(0);
    expect(c.getLogsCompleted as number).toBeGreaterThan(0);
  });
});
