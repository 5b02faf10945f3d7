// The jump-destination analysis of @ethereumjs/evm 10.1's interpreter, once per contract code
// instead of once per call frame. Every frame whose code holds a JUMP walks the whole code: a
// table of valid destinations, the value of every PUSH, and the opcode of every position (an
// array as long as the code). A token's code is kilobytes, so a `balanceOf` paid for that walk on
// every call. The analysis depends only on the code and the EVM's opcode table (its hardfork),
// and the interpreter only reads what it returns, so it is kept per code object (StoreStateManager
// hands out one object per code hash, state.ts; a WeakMap lets the analysis go with it) and per
// opcode table.
//
// The interpreter class is found at run time (interpreter-class.ts) and the analysis method wrapped
// on its prototype.
import type { Common } from '@ethereumjs/common';
import { interpreterClass } from './interpreter-class.js';

interface Analysis {
  jumps: Uint8Array;
  pushes: Record<number, bigint>;
  opcodesCached: unknown[];
}

interface InterpreterProto {
  _getValidJumpDestinations(this: { _evm: { _opcodeMap: unknown } }, code: Uint8Array): Analysis;
  [PATCHED]?: true;
}

const PATCHED = Symbol('jump analysis kept per code');

/** Analyses by code, then by opcode table. */
const analyses = new WeakMap<Uint8Array, Map<unknown, Analysis>>();

let installed: Promise<void> | undefined;

/** Installs the cache in the interpreter of @ethereumjs/evm (once per process). */
export function keepJumpAnalysis(common: Common): Promise<void> {
  installed ??= (async () => {
    const proto = (await interpreterClass(common))?.prototype as InterpreterProto | undefined;
    if (proto === undefined || typeof proto._getValidJumpDestinations !== 'function' || proto[PATCHED]) return;
    const analyse = proto._getValidJumpDestinations;
    proto._getValidJumpDestinations = function (code) {
      const table = this._evm._opcodeMap;
      let byTable = analyses.get(code);
      let a = byTable?.get(table);
      if (a === undefined) {
        a = analyse.call(this, code);
        if (byTable === undefined) {
          byTable = new Map();
          analyses.set(code, byTable);
        }
        byTable.set(table, a);
      }
      return a;
    };
    proto[PATCHED] = true;
  })();
  return installed;
}
