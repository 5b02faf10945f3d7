// Every native module the node uses loads its native code on this machine, although package.json
// denies all dependency install scripts (allowScripts): the prebuilt binaries shipped in the
// packages (node-gyp-build) and the platform packages npm installs as optional dependencies
// (anvil, cast, uWebSockets.js binaries) are enough. A missing prebuild would show here, not at the
// first query.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..'); // scripts/dist/test
const gypBuild = require('node-gyp-build') as { path(dir: string): string };
const pkgDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

describe('native modules load without install scripts', () => {
  test('the root package.json denies every install script it knows, and approves none', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    expect(pkg.allowScripts).toBeDefined();
    expect(Object.values(pkg.allowScripts!).every((v) => v === false)).toBe(true);
  });

  test.each(['classic-level', 'secp256k1', 'bufferutil', 'utf-8-validate'])(
    '%s: node-gyp-build finds a prebuilt binary',
    (name) => {
      const dir = pkgDir(name);
      const binary = gypBuild.path(dir);
      expect(binary.startsWith(join(dir, 'prebuilds') + sep)).toBe(true);
      expect(() => require(binary)).not.toThrow();
    },
  );

  test('classic-level: a database opens, writes and reads back', async () => {
    const { ClassicLevel } = (await import('classic-level')) as typeof import('classic-level');
    const dir = mkdtempSync(join(tmpdir(), 'native-'));
    try {
      const db = new ClassicLevel<string, string>(dir);
      await db.put('k', 'v');
      expect(await db.get('k')).toBe('v');
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('secp256k1: the package exports its native bindings, not the JS fallback', () => {
    const native = require('secp256k1/bindings') as object;
    expect(require('secp256k1')).toBe(native);
    // And it computes: the public key of private key 1 is the generator point.
    const { publicKeyCreate } = native as { publicKeyCreate(k: Uint8Array, compressed: boolean): Uint8Array };
    const one = new Uint8Array(32);
    one[31] = 1;
    expect(Buffer.from(publicKeyCreate(one, true)).toString('hex')).toBe(
      '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
    );
  });

  test('uWebSockets.js: the native binary for this platform, not the fallback', () => {
    const uws = require('uWebSockets.js') as { App?: unknown };
    expect(typeof uws.App).toBe('function');
    const loaded = Object.keys(require.cache).filter((k) => k.includes(`${sep}binaries${sep}uws_`));
    expect(loaded).toEqual([
      join(
        pkgDir('uWebSockets.js'),
        'binaries',
        `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`,
      ),
    ]);
  });

  test.each(['anvil', 'cast'])('%s: the binary from the platform package runs', (name) => {
    const out = spawnSync(join(root, 'node_modules', '.bin', name), ['--version'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`${name} Version: 1\\.7\\.1`));
  });
});
