// The process log: JSON lines that parse, each with level, time, component, network and msg;
// key material scrubbed from messages and access-log fields; the level threshold honoured.
import { createLog, redact } from '../src/index.js';

const KEY = 'a3f9c2d4e5b60718293a4b5c6d7e8f90';

test('json lines parse and carry level, time, component and network; keys never reach them', () => {
  const lines: string[] = [];
  const log = createLog({ format: 'json', level: 'info' }, (l) => lines.push(l));
  log.info(`listening; try http://127.0.0.1:8545/v3/${KEY}`);
  log.child('ledger').warn('Redis lost: redis://:hunter2secret@10.0.0.5:6379/0');
  log.child('follow', 'mainnet').info(`upstream https://up.example/v3/${KEY}?x=1`);
  log.child('access').record('eth_call', { method: 'eth_call', keyId: KEY, credits: 80, durationMs: 1.5 });
  log.child('dashboard').info('admin token cna_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd created');
  log.debug('not written at info');
  expect(lines).toHaveLength(5);
  const recs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const r of recs) {
    expect(Object.keys(r)).toEqual(expect.arrayContaining(['level', 'time', 'component', 'network', 'msg']));
    expect(Number.isNaN(Date.parse(r['time'] as string))).toBe(false);
  }
  expect(recs.map((r) => [r['level'], r['component'], r['network']])).toEqual([
    ['info', 'serve', null],
    ['warn', 'ledger', null],
    ['info', 'follow', 'mainnet'],
    ['info', 'access', null],
    ['info', 'dashboard', null],
  ]);
  const all = lines.join('');
  for (const secret of [KEY, 'hunter2secret', 'cna_AbCdEf']) expect(all).not.toContain(secret);
  expect(recs[3]?.['credits']).toBe(80);
});

test('text lines keep the serve: prefix; redact leaves block hashes and numbers alone', () => {
  const lines: string[] = [];
  createLog({ format: 'text', level: 'warn' }, (l) => lines.push(l))
    .child('ledger')
    .warn(`key ${KEY} refused`);
  expect(lines).toEqual(['serve: warn: ledger: key [redacted] refused\n']);
  const hash = '0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6';
  expect(redact(`block ${hash} number 1600`)).toBe(`block ${hash} number 1600`);
});
