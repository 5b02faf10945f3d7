// What a node-cli start loads before its command runs. Every command's options are declared at
// start (commander needs them all for --help and for errors), so the modules those declarations
// import load for every command, `keys create` and a refused flag included; the store, the EVM and
// the server load later, in the command that uses them. A light start is ~0.3 s of CPU less per
// process (the ESM loader resolving and linking ~130 more modules: @chainnode/core's index,
// @ethereumjs/util and @noble/curves). A loader hook records every module the process loads.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliBin, tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';

let dir: TempDir;
beforeAll(async () => {
  dir = await tempDir('chainnode-cli-startup-');
  writeFileSync(
    join(dir.dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(${JSON.stringify(join(dir.dir, 'loaded.txt'))}, url + '\\n');
  return next(url, context);
}
`,
  );
  writeFileSync(
    join(dir.dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
  );
});
afterAll(async () => {
  await dir?.cleanup();
});

/** The module URLs a node-cli run with `args` loaded (and its exit status). */
function loadedBy(args: string[]): { status: number | null; urls: string[] } {
  const list = join(dir.dir, 'loaded.txt');
  writeFileSync(list, '');
  const r = spawnSync(process.execPath, ['--import', join(dir.dir, 'register.mjs'), cliBin(), ...args], {
    encoding: 'utf8',
  });
  return {
    status: r.status,
    urls: readFileSync(list, 'utf8')
      .split('\n')
      .filter((u) => u !== ''),
  };
}

/** Modules no command needs before it runs. */
const HEAVY = [
  /\/packages\/core\/dist\/src\/index\.js$/,
  /\/packages\/store\/dist\/src\/index\.js$/,
  /\/packages\/store\/dist\/src\/schema\//,
  /\/node_modules\/@ethereumjs\//,
  /\/node_modules\/classic-level\//,
  /\/node_modules\/uWebSockets|uws-js-unofficial/,
];

test.each([
  ['--help', ['--help'], 0],
  ['a refused flag', ['serve', '--threads', 'many'], 1],
  ['db --help', ['db', '--help'], 0],
])('%s loads none of the store, the EVM or the server', (_name, args, status) => {
  const r = loadedBy(args);
  expect(r.status).toBe(status);
  // The hook saw the CLI's own modules, so an empty list cannot pass.
  expect(r.urls.some((u) => u.endsWith('/packages/cli/dist/src/main.js'))).toBe(true);
  expect(r.urls.filter((u) => HEAVY.some((h) => h.test(u)))).toEqual([]);
});
