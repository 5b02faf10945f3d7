// The creation code of the tracers' workload (trace-workload.sol), kept in trace-workload.json
// with the keccak of the source it was compiled from. A module of its own (no test helpers
// imported) so that plain node can rewrite the file.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledContract, compileSolidity } from '@chainnode/testkit';
import { keccak256 } from 'ethers';

type Json = Record<string, unknown>;

/** The test's source folder (this module runs from dist/test). */
const HERE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test');
const CONTRACTS = ['Lib', 'Hub', 'Child', 'Doomed', 'Failing'] as const;
export type WorkloadContract = (typeof CONTRACTS)[number];

/**
 * Each contract's creation code: from trace-workload.json when it was compiled from this very
 * source (keccak of the text; solc costs seconds of CPU), else compiled now. To refresh the file
 * after editing the source: `node -e "import('./packages/cli/dist/test/trace-workload-code.js').then((m) => m.writeWorkloadCode())"`.
 */
export function workloadCode(): Record<string, string> {
  const source = readFileSync(join(HERE, 'trace-workload.sol'), 'utf8');
  const stored = JSON.parse(readFileSync(join(HERE, 'trace-workload.json'), 'utf8')) as Json;
  if (stored.source === keccak256(Buffer.from(source))) return stored.code as Record<string, string>;
  const out = compileSolidity({
    file: 'trace-workload.sol',
    source,
    evmVersion: 'cancun',
    reproducible: true,
    output: 'bytecode',
  });
  return Object.fromEntries(CONTRACTS.map((name) => [name, `0x${compiledContract(out, name).code}`]));
}

/** Writes trace-workload.json for the current source. */
export function writeWorkloadCode(): void {
  const source = readFileSync(join(HERE, 'trace-workload.sol'), 'utf8');
  const file = { source: keccak256(Buffer.from(source)), code: workloadCode() };
  writeFileSync(join(HERE, 'trace-workload.json'), `${JSON.stringify(file, null, 2)}\n`);
}
