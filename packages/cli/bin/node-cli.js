#!/usr/bin/env node
// Thin launcher so `npx node-cli` works right after `npm ci` (whose `prepare` step runs `tsc -b`).
//
// CommonJS on purpose (bin/package.json): libuv sizes its thread pool once, at its first use, from
// UV_THREADPOOL_SIZE, and an ES module entry is itself read through that pool, so only a CommonJS
// entry runs early enough to set it. serve needs 2 pool threads per log worker plus 2 (each app
// thread, one per core by default, has its own log worker; network.ts checkThreadPool): the
// default here covers one network with the default logWorkers on every core. A value given in the
// environment wins.
'use strict';
// `serve`: SIGTERM/SIGINT are recorded from here on and handed to the runtime once it has loaded
// (@chainnode/runtime's signals.ts), so a signal while the modules load does not kill the process by
// the signal's default action.
if (process.argv[2] === 'serve') {
  const early = { received: [], listener: (signal) => early.received.push(signal) };
  process[Symbol.for('chainnode.early-signals')] = early;
  process.on('SIGTERM', early.listener);
  process.on('SIGINT', early.listener);
}
if (process.env.UV_THREADPOOL_SIZE === undefined) {
  const cores = require('node:os').availableParallelism();
  process.env.UV_THREADPOOL_SIZE = String(Math.min(1024, Math.max(4, 2 * cores + 2)));
}
import('../dist/src/main.js').then(({ main }) => main(process.argv));
