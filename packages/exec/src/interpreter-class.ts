// The interpreter class of @ethereumjs/evm 10.1, which the package does not export (its EVM builds
// one per call frame). The tunings that change what the interpreter does per frame or per opcode
// (jump-cache.ts, frame-tuning.ts) find it here: a custom opcode run once on a throwaway VM hands
// out the running interpreter, whose constructor and prototype are the package's own. No fork, no
// patch of the package's files.
import type { Common } from '@ethereumjs/common';
import { createVM } from '@ethereumjs/vm';

/** The interpreter's constructor; its prototype holds `run`, `runStep` and the jump analysis. */
export type InterpreterClass = (new (...args: never[]) => object) & { prototype: object };

/** An opcode no hardfork assigns, for the custom opcode that finds the interpreter. */
const PROBE_OPCODE = 0x0c;

let found: Promise<InterpreterClass | undefined> | undefined;

/** The interpreter class (once per process); undefined if the package no longer builds one this way. */
export function interpreterClass(common: Common): Promise<InterpreterClass | undefined> {
  found ??= (async () => {
    let proto: { constructor?: unknown } | undefined;
    const vm = await createVM({
      common: common.copy(),
      evmOpts: {
        customOpcodes: [
          {
            opcode: PROBE_OPCODE,
            opcodeName: 'PROBE',
            baseFee: 0,
            logicFunction: (runState) => {
              proto = Object.getPrototypeOf((runState as unknown as { interpreter: object }).interpreter);
            },
          },
        ],
      },
    });
    await vm.evm.runCode?.({ code: Uint8Array.of(PROBE_OPCODE), gasLimit: 100n });
    const ctor = proto?.constructor;
    return typeof ctor === 'function' ? (ctor as InterpreterClass) : undefined;
  })();
  return found;
}
