// A front end that is not the CLI: starts the runtime with a RuntimeConfig built in code (the
// datadir, threads and port from argv; everything else the defaults), creates a key once the
// ledger is open, and prints one JSON line on stdout once listening: the port and the key. Exits
// with runRuntime's code; a RuntimeError is printed as `refused: <message>` with exit 3.
import { DEFAULT_CONFIG, RuntimeError, runRuntime } from '@chainnode/runtime';
import type { RuntimeConfig } from '@chainnode/runtime';

const [datadir, threads] = process.argv.slice(2);
if (datadir === undefined || threads === undefined) throw new Error('usage: run-config.js <datadir> <threads>');
const config: RuntimeConfig = {
  datadir,
  server: structuredClone(DEFAULT_CONFIG),
  host: '127.0.0.1',
  port: 0,
  networks: [],
  follows: [],
  ledger: { failure: 'open' },
  log: { format: 'json', level: 'info', access: false },
  threads: Number(threads),
};
let key = '';
try {
  const code = await runRuntime(config, {
    onLedger: async (ledger, server) => {
      ({ key } = await ledger.manager(server).create({ name: 'runtime entry test', plan: 'custom' }));
    },
    onListening: (l) => process.stdout.write(`${JSON.stringify({ port: l.port, key, ledger: l.ledger })}\n`),
  });
  process.exit(code);
} catch (err) {
  if (!(err instanceof RuntimeError)) throw err;
  process.stdout.write(`refused: ${err.message}\n`);
  process.exit(3);
}
