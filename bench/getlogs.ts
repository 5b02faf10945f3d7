// getLogs benchmark: a large synthetic chain built through the store's writer and log
// index, the query mix on the index and on the bloom-scan baseline, index size, and a server probe.
//   npm run bench:logs [-- --smoke | --scale N (N >= 1, or 0 < N < 1: a prefix of the standard chain)] [--json <file>] [--datadir <dir>] [--no-server]
//   [--inline-generator] (generate on the writer's thread, for comparison)
// --datadir builds into <dir> and keeps it (a later run with the same size reuses it).
import { writeFile } from 'node:fs/promises';
import { formatReport, runGetLogsBench } from './src/getlogs-run.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:getlogs');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const v = process.argv[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
  return v;
}

const smoke = process.argv.includes('--smoke');
const scaleArg = arg('scale');
const scale = scaleArg === undefined ? 1 : Number(scaleArg);
// An integer >= 1, or a fraction in (0, 1) for a shorter prefix of the standard chain (iteration).
if (
  !Number.isFinite(scale) ||
  scale <= 0 ||
  (scale > 1 && !Number.isInteger(scale)) ||
  Math.round(250_000 * scale) < 1_000
) {
  console.error(`--scale: expected a positive integer, or a fraction >= 0.004 below 1, got ${scaleArg}`);
  process.exit(2);
}
if (smoke && scaleArg !== undefined) {
  console.error('--smoke and --scale exclude each other');
  process.exit(2);
}
const json = arg('json');
const datadir = arg('datadir');
const result = await runGetLogsBench({
  size: smoke ? 'smoke' : 'standard',
  scale,
  ...(datadir !== undefined ? { datadir } : {}),
  server: !process.argv.includes('--no-server'),
  inlineGenerator: process.argv.includes('--inline-generator'),
  log: (line) => console.error(line),
});
console.log(formatReport(result));
if (json !== undefined) await writeFile(json, `${JSON.stringify(result, null, 2)}\n`);
if (result.mismatches > 0) process.exitCode = 1;
