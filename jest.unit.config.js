// The fast tier (`npm run test:unit`), for the edit loop: the suites that need no imported chain,
// no child node-cli process, no anvil, Redis or browser. `npm test` runs everything, these
// included. A name here that matches no compiled suite fails the run, so the tier cannot shrink
// silently when a file is renamed.
import { existsSync } from 'node:fs';
import base from './jest.config.js';

const UNIT = {
  'packages/core': ['deposit-tx', 'hex', 'lanes', 'receipt-encoding'],
  'packages/accounts': ['allowlist'],
  'packages/cli': ['serve-config'],
  'packages/store': [
    'db',
    'keccak',
    'logs',
    'node-slab',
    'rewind',
    'schema',
    'single-flight',
    'state-diff',
    'trie-read',
    'trie-update',
  ],
  'packages/rpc': [
    'envelope',
    'format',
    'hex-digits',
    'json-text',
    'log-text',
    'methods',
    'offload',
    'raw-ids',
    'request-errors',
    'subscriptions',
    'transaction-text',
  ],
  'packages/server': [
    'budgets',
    'config',
    'key-security',
    'log',
    'monitoring-files',
    'network',
    'reply-budget',
    'server',
  ],
  'packages/ingest': ['op-genesis', 'rpc-source'],
  'packages/dashboard': ['api', 'tls'],
  scripts: ['import-cycles', 'words', 'docs-generated', 'docs-links', 'docs-defaults'],
};

const files = Object.entries(UNIT).flatMap(([dir, names]) => names.map((n) => `${dir}/dist/test/${n}.test.js`));
const missing = files.filter((f) => !existsSync(new URL(f, import.meta.url)));
if (missing.length > 0) throw new Error(`jest.unit.config.js: no compiled suite ${missing.join(', ')} (run tsc -b)`);

export default {
  ...base,
  testMatch: files.map((f) => `<rootDir>/${f}`),
};
