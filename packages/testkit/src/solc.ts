// Solidity compiled with the pinned solc (0.8.30, a dependency of this package): the one place the
// fixture chain, the bench chains and the tests compile contracts. solc (an 8 MB emscripten
// module) loads on the first compile, not when testkit is imported: most tests import testkit
// and never compile.
import { createRequire } from 'node:module';

type Solc = typeof import('solc');
let loaded: Solc | undefined;
const solcModule = (): Solc => {
  loaded ??= createRequire(import.meta.url)('solc') as Solc;
  return loaded;
};

export interface SolidityInput {
  /** The source's file name in the compiler input (contracts are looked up under it). */
  readonly file: string;
  readonly source: string;
  readonly evmVersion: string;
  /** Optimizer on (200 runs) and the metadata hash off, so the code depends only on the source text. */
  readonly reproducible?: boolean;
  /** 'bytecode' (creation code) or 'deployedBytecode' (runtime code). */
  readonly output: 'bytecode' | 'deployedBytecode';
}

export interface CompiledSolidity {
  /** Each contract's ABI and code (hex without 0x; creation or runtime code as asked). */
  readonly contracts: ReadonlyMap<string, { readonly abi: unknown[]; readonly code: string }>;
  readonly solcVersion: string;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: unknown[]; evm: Record<string, { object: string }> }>>;
}

/** Compiles one source file; throws with solc's messages on a compiler error. */
export function compileSolidity(o: SolidityInput): CompiledSolidity {
  const input = {
    language: 'Solidity',
    sources: { [o.file]: { content: o.source } },
    settings: {
      evmVersion: o.evmVersion,
      ...(o.reproducible === true
        ? { optimizer: { enabled: true, runs: 200 }, metadata: { bytecodeHash: 'none', appendCBOR: false } }
        : {}),
      outputSelection: { '*': { '*': ['abi', `evm.${o.output}.object`] } },
    },
  };
  const solc = solcModule();
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const contracts = new Map<string, { abi: unknown[]; code: string }>();
  for (const [name, c] of Object.entries(output.contracts?.[o.file] ?? {})) {
    contracts.set(name, { abi: c.abi, code: c.evm[o.output]?.object ?? '' });
  }
  return { contracts, solcVersion: solc.version() };
}

/** One contract of a compiled file, with non-empty code; throws naming it otherwise. */
export function compiledContract(c: CompiledSolidity, name: string): { abi: unknown[]; code: string } {
  const found = c.contracts.get(name);
  if (found === undefined || found.code.length === 0) throw new Error(`solc output has no code for ${name}`);
  return found;
}
