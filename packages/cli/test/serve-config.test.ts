// serve's settings: every flag of serve is also a field of the config file under the same name,
// and each setting comes from the flag, else the file, else the default (one schema,
// SERVER_FIELDS, declares all three). The real commander program parses the flags; only its
// action is replaced, so nothing is served.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SERVER_FIELDS } from '@chainnode/runtime';
import type { ConfigField } from '@chainnode/runtime';
import { buildProgram } from '../src/index.js';
import { withConfigFile } from '../src/cmds/serve/index.js';

const dir = mkdtempSync(join(tmpdir(), 'chainnode-serve-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function configFile(body: unknown): string {
  const path = join(dir, `server-${files++}.json`);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
  return path;
}

/** What serve would run with for `args` (`serve` or `start` first). */
async function settings(args: string[]): Promise<Record<string, unknown>> {
  const program = buildProgram();
  program.exitOverride();
  const cmd = program.commands.find((c) => c.name() === args[0]) as Command;
  let got: Record<string, unknown> | undefined;
  cmd.action((opts: { datadir: string; config?: string }, command: Command) => {
    got = withConfigFile(opts, command);
  });
  await program.parseAsync(['node', 'node-cli', ...args]);
  if (got === undefined) throw new Error('the action did not run');
  return got;
}

const pick = (o: Record<string, unknown>, keys: string[]): Record<string, unknown> =>
  Object.fromEntries(keys.map((k) => [k, o[k]]));
const KEYS = ['host', 'port', 'logLevel', 'logFormat', 'accessLog', 'threads', 'reorgDepth', 'ledgerFailure'];

test('without flags or file, the defaults of the schema', async () => {
  const s = await settings(['serve', '--datadir', join(dir, 'none')]);
  expect(pick(s, KEYS)).toEqual({
    host: '127.0.0.1',
    port: '8545',
    logLevel: 'info',
    logFormat: undefined,
    accessLog: undefined,
    threads: 'cores',
    reorgDepth: '64',
    ledgerFailure: 'open',
  });
  expect(s['metricsPort']).toBeUndefined();
});

test('the file overrides the defaults, flag by flag', async () => {
  const file = configFile({
    host: '0.0.0.0',
    port: 9100,
    logLevel: 'warn',
    logFormat: 'json',
    accessLog: true,
    threads: 1,
    reorgDepth: 12,
    metricsPort: 9101,
    maxBodyBytes: 4096,
  });
  const s = await settings(['serve', '--config', file]);
  expect(pick(s, KEYS)).toEqual({
    host: '0.0.0.0',
    port: '9100',
    logLevel: 'warn',
    logFormat: 'json',
    accessLog: true,
    threads: '1',
    reorgDepth: '12',
    ledgerFailure: 'open', // not in the file: the default
  });
  expect(s['metricsPort']).toBe('9101');
});

test('a flag overrides the file; what the flags leave alone still comes from the file', async () => {
  const file = configFile({ port: 9100, logLevel: 'warn', threads: 1, accessLog: true, ledgerFailure: 'closed' });
  const s = await settings(['serve', '--config', file, '--port', '9200', '--log-level', 'debug', '--threads', '2']);
  expect(pick(s, ['port', 'logLevel', 'threads', 'accessLog', 'ledgerFailure'])).toEqual({
    port: '9200',
    logLevel: 'debug',
    threads: '2',
    accessLog: true,
    ledgerFailure: 'closed',
  });
  // A flag given with the default's own value still wins over the file.
  const d = await settings(['serve', '--config', file, '--port', '8545']);
  expect(d['port']).toBe('8545');
});

test('<datadir>/server.json is the file when --config is not given; start reads it too', async () => {
  const datadir = join(dir, 'dd');
  mkdirSync(datadir);
  writeFileSync(join(datadir, 'server.json'), JSON.stringify({ port: 9300, follow: 'http://127.0.0.1:1' }));
  expect(pick(await settings(['serve', '--datadir', datadir]), ['port', 'follow'])).toEqual({
    port: '9300',
    follow: 'http://127.0.0.1:1',
  });
  // start has no follow flags: it takes the rest of the file.
  expect(pick(await settings(['start', '--datadir', datadir]), ['port', 'follow'])).toEqual({
    port: '9300',
    follow: undefined,
  });
});

test('metricsPort 0 in the file leaves the listener off (--metrics-port 0 would ask for any free port)', async () => {
  const s = await settings(['serve', '--config', configFile({ metricsPort: 0 })]);
  expect(s['metricsPort']).toBeUndefined();
  const f = await settings(['serve', '--config', configFile({ metricsPort: 0 }), '--metrics-port', '0']);
  expect(f['metricsPort']).toBe('0');
});

test('an unknown or ill-typed field stops serve with the file and the field named', async () => {
  const cases: [unknown, RegExp][] = [
    [{ prot: 9100 }, /server-\d+\.json: prot: unknown field$/],
    [{ 'log-level': 'warn' }, /log-level: unknown field \(did you mean "logLevel"\?\)/],
    [{ port: '9100' }, /port: expected a non-negative integer, got "9100"/],
    [{ port: 70000 }, /port must be at most 65535/],
    [{ logLevel: 'loud' }, /logLevel: expected one of "debug", "info", "warn", "error", "silent", got "loud"/],
    [{ logFormat: 'xml' }, /logFormat: expected one of "json", "text", got "xml"/],
    [{ accessLog: 'yes' }, /accessLog: expected a boolean/],
    [{ threads: 0 }, /threads: expected a number of threads 1-256 or "cores", got 0/],
    [{ startBlock: 0 }, /startBlock: expected a block number above 0 or "head-K", got 0/],
    [{ ledgerFailure: 'maybe' }, /ledgerFailure: expected one of "open", "closed", got "maybe"/],
    ['{"port": 9100,', /is not valid JSON/],
  ];
  for (const [body, message] of cases) {
    const file = configFile(body);
    await expect(settings(['serve', '--config', file])).rejects.toThrow(message);
  }
});

test('one schema: every flag of serve but --datadir, --config and --network is a field of the file', () => {
  const serve = buildProgram().commands.find((c) => c.name() === 'serve') as Command;
  const flags = serve.options
    .map((o) => o.attributeName())
    .filter((n) => !['datadir', 'config', 'network'].includes(n));
  const fields = Object.entries(SERVER_FIELDS as Record<string, ConfigField<unknown>>)
    .filter(([, f]) => f.flag !== undefined)
    .map(([n]) => n);
  expect([...flags].sort()).toEqual([...fields].sort());
  // And each option's help is the field's doc line.
  for (const o of serve.options) {
    const f = (SERVER_FIELDS as Record<string, ConfigField<unknown>>)[o.attributeName()];
    if (f !== undefined) expect(o.description.startsWith(f.doc.replace(/`/g, ''))).toBe(true);
  }
});
