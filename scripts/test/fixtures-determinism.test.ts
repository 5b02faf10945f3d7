// Regenerates the fixtures into a temporary folder with the compiled generator (a child
// process, exactly what `npm run fixtures` runs) and compares them byte for byte, by sha256,
// with the committed files.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { FIXTURES_DIR, REPO_ROOT } from './fixture-files.js';

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

function runGenerator(out: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'scripts/dist/gen-fixtures.js'), '--out', out], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('fixture generator', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out !== undefined) await rm(out, { recursive: true, force: true });
  });

  it('regenerates genesis.json, chain.rlp, README.md and the fork byte for byte', async () => {
    out = await mkdtemp(join(tmpdir(), 'chainnode-fixtures-'));
    const { code, stderr } = await runGenerator(out);
    if (code !== 0) throw new Error(`generator exited with ${code}:\n${stderr}`);
    for (const file of ['genesis.json', 'chain.rlp', 'README.md', 'fork/genesis.json', 'fork/chain.rlp']) {
      expect(`${file} ${await sha256(join(out, file))}`).toBe(`${file} ${await sha256(join(FIXTURES_DIR, file))}`);
    }
  }, 1_200_000); // the generator needs ~60 s of CPU on a quiet 2-core machine, ~100 s under load

  it('rejects a missing --out with a usage message', async () => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'scripts/dist/gen-fixtures.js')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('--out <dir> is required');
  });
});
