// What a node-cli start loads before its command runs. Every command's options are declared at
// start (commander needs them all for --help and for errors), so the modules those declarations
// import load for every command, `keys create` and a refused flag included; the store, the EVM and
// the server load later, in the command that uses them. A light start is ~0.3 s of CPU less per
// process (the ESM loader resolving and linking ~130 more modules: @chainnode/core's index,
// @ethereumjs/util and @noble/curves). A loader hook records every module the process loads.
// `serve` loads the store and the server but not the EVM (@chainnode/exec and @ethereumjs/vm, ~470
// modules on its serving thread and its offload worker, ~0.9 s of CPU per start with one app
// thread): the methods that execute load it on their first call.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliBin, datadirCopy, tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { createKeyCli, rpc, spawnServe } from './serve-helpers.js';

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

test('serve loads the EVM on the first call that executes, not at start', async () => {
  const list = join(dir.dir, 'loaded.txt');
  writeFileSync(list, '');
  const loaded = () => readFileSync(list, 'utf8').split('\n');
  const evm = (urls: string[]) =>
    urls.filter((u) => /\/packages\/exec\/dist\/|\/node_modules\/@ethereumjs\/(vm|evm)\//.test(u));
  const data = await datadirCopy('fixtures');
  try {
    const { key } = await createKeyCli(data.dir, 'custom');
    // The hook in the server's process and its threads (workers take NODE_OPTIONS's --import).
    const server = await spawnServe(data.dir, [], { NODE_OPTIONS: `--import ${join(dir.dir, 'register.mjs')}` });
    try {
      const url = server.url(key);
      // A getLogs answer runs on the offload worker: both threads have started and served.
      const logs = await rpc(url, 'eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x40' }]);
      expect(Array.isArray(logs.body.result)).toBe(true);
      const started = loaded();
      expect(started.some((u) => u.endsWith('/packages/store/dist/src/index.js'))).toBe(true);
      expect(evm(started)).toEqual([]);
      // The first eth_call loads it (and so the check above can fail).
      const head = await rpc(url, 'eth_blockNumber', []);
      const call = await rpc(url, 'eth_call', [
        { to: '0x0000000000000000000000000000000000000004', data: '0x01' },
        head.body.result,
      ]);
      expect(call.body.result).toBe('0x01');
      expect(evm(loaded()).length).toBeGreaterThan(0);
    } finally {
      await server.stop('SIGTERM');
    }
  } finally {
    await data.cleanup();
  }
});
