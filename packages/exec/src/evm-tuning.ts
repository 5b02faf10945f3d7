// Three costs @ethereumjs/evm 10.1 pays on every call that need not be paid, taken out through the
// VM's own objects (no fork, no patch of the package's files). Measured with bench/call-cpu.ts
// (docs/decisions/execution.md):
//
// - `Common.isActivatedEIP` scans the hardfork's list of EIPs (an array of some sixty numbers)
//   and the interpreter asks it twice before every opcode (EIP-6800 and 7864, never active here):
//   answered from a table per hardfork and EIP instead (`rememberEips`).
// - SHA3 hashes with @noble/hashes' Keccak unless the Common brings its own: it is given core's
//   (hash-wasm's, the one the import and the store hash with) in `chainCrypto`.
// - MSTORE turns its word into bytes through a hex string, then pads it into a second array: the
//   word is written into memory straight from the bigint instead (`fastMstore`).
//
// And one that @ethereumjs/tx and /block pay on every transaction and header built (imports, the
// fixture generator): `Common.updateParams` deep-copies the parameters and rebuilds the Common's
// table each time; a merge already made is taken from the table it built (`rememberParams`).
import type { Common } from '@ethereumjs/common';
import type { VM } from '@ethereumjs/vm';
import { keccak256 } from '@chainnode/core';
import { tuneFrames } from './frame-tuning.js';

/** The Common's `customCrypto` for execution: core's Keccak (hash-wasm), beside what the caller brings. */
export function chainCrypto<C extends object>(crypto: C): C & { keccak256: (data: Uint8Array) => Uint8Array } {
  return { ...crypto, keccak256 };
}

type EipCheck = (this: Common, eip: number) => boolean;

const REMEMBERED = Symbol('isActivatedEIP remembered');

/**
 * Makes `common.isActivatedEIP` a table lookup per hardfork (keyed by the hardfork it asks at, so
 * a hardfork change needs no notice). A copy of the Common is not tuned (copy() takes enumerable
 * properties only): it asks the package's scan until rememberEips is given it too.
 */
export function rememberEips(common: Common): void {
  const c = common as Common & { [REMEMBERED]?: true };
  if (c[REMEMBERED]) return;
  const scan: EipCheck = Object.getPrototypeOf(common).isActivatedEIP;
  const byHardfork = new Map<string, Map<number, boolean>>();
  // The table of the hardfork asked last: calls come in runs at one hardfork.
  let last: { hardfork: string; table: Map<number, boolean> } | undefined;
  const remembered: EipCheck = function (eip) {
    const hardfork = this.hardfork();
    let table: Map<number, boolean> | undefined;
    if (last !== undefined && last.hardfork === hardfork) table = last.table;
    else {
      table = byHardfork.get(hardfork);
      if (table === undefined) byHardfork.set(hardfork, (table = new Map()));
      last = { hardfork, table };
    }
    let on = table.get(eip);
    if (on === undefined) {
      on = scan.call(this, eip);
      table.set(eip, on);
    }
    return on;
  };
  // Both own and not enumerable: copy() (Object.assign) hands neither to a copy, which asks the
  // prototype's scan until it is tuned itself (a copied marker alone would keep it from that).
  Object.defineProperty(c, 'isActivatedEIP', { value: remembered, writable: true, configurable: true });
  Object.defineProperty(c, REMEMBERED, { value: true });
}

type ParamsDict = Parameters<Common['updateParams']>[0];
type ParamsUpdate = (this: Common, params: ParamsDict) => Common;
/** The parameter table of a Common: updateParams and a hardfork or EIP change build a new one. */
interface ParamsTable {
  _paramsCache: object;
}

const PARAMS_REMEMBERED = Symbol('updateParams remembered');

/**
 * Makes `common.updateParams(params)` a lookup once the same table has taken the same parameter
 * set. Every transaction and header constructor copies the Common and calls it with the same
 * module constant (paramsTx, paramsBlock), and each call copied every EIP's parameters through
 * JSON and built the table again: an eighth of the fixture generator's CPU and a fifteenth of an
 * import's. A table is never changed once built (a change builds a new object, and copies share
 * their original's), so the table a merge built is remembered by the table it started from and
 * the set merged, and handed to the next Common that starts there. Unlike rememberEips' table,
 * this is an enumerable own property: copy() (Object.assign) hands it to every copy.
 */
export function rememberParams(common: Common): void {
  const c = common as Common & { [PARAMS_REMEMBERED]?: true };
  if (c[PARAMS_REMEMBERED]) return;
  const update: ParamsUpdate = Object.getPrototypeOf(common).updateParams;
  /** Table before -> parameter set -> the table the merge built. */
  const built = new WeakMap<object, Map<ParamsDict, object>>();
  const note = (from: object, params: ParamsDict, to: object): void => {
    let m = built.get(from);
    if (m === undefined) built.set(from, (m = new Map()));
    m.set(params, to);
  };
  const remembered: ParamsUpdate = function (params) {
    const self = this as unknown as ParamsTable;
    const from = self._paramsCache;
    const to = built.get(from)?.get(params);
    if (to !== undefined) {
      self._paramsCache = to;
      return this;
    }
    update.call(this, params);
    note(from, params, self._paramsCache);
    note(self._paramsCache, params, self._paramsCache); // the same set again changes nothing
    return this;
  };
  c.updateParams = remembered;
  c[PARAMS_REMEMBERED] = true;
}

interface RunState {
  stack: { popN(n: number): bigint[] };
  memory: { write(offset: number, size: number, value: Uint8Array): void };
}

interface OpcodeEntry {
  opHandler: (runState: RunState, common: Common) => void;
}

const MSTORE = 0x52;
const MASK64 = (1n << 64n) - 1n;

/** MSTORE: the word's 32 bytes big-endian, written from four 64-bit limbs into a reused buffer. */
const word = new Uint8Array(32);
const wordView = new DataView(word.buffer);
function mstore(runState: RunState): void {
  const [offset, value] = runState.stack.popN(2) as [bigint, bigint];
  wordView.setBigUint64(24, value & MASK64);
  wordView.setBigUint64(16, (value >> 64n) & MASK64);
  wordView.setBigUint64(8, (value >> 128n) & MASK64);
  wordView.setBigUint64(0, value >> 192n);
  // Memory.write copies the bytes into its own store.
  runState.memory.write(Number(offset), 32, word);
}

/**
 * The tunings for `vm`: its Common's EIP checks remembered (its EVM runs on the same Common), the
 * MSTORE above, and the frame and loop of frame-tuning.ts (in place once the interpreter class is
 * found, once per process: the returned promise).
 */
export function tuneVm(vm: VM): Promise<void> {
  rememberEips(vm.common);
  fastMstore(vm);
  return tuneFrames(vm);
}

/**
 * Gives `vm`'s EVM the MSTORE above, now and whenever it rebuilds its opcode table (on the
 * Common's `hardforkChanged`, through its getActiveOpcodes).
 */
export function fastMstore(vm: VM): void {
  const evm = vm.evm as unknown as {
    _opcodeMap?: (OpcodeEntry | undefined)[];
    getActiveOpcodes(): unknown;
  };
  const install = (): void => {
    const entry = evm._opcodeMap?.[MSTORE];
    if (entry !== undefined) entry.opHandler = mstore;
  };
  const rebuild = Object.getPrototypeOf(evm).getActiveOpcodes as () => unknown;
  evm.getActiveOpcodes = function () {
    const opcodes = rebuild.call(this);
    install();
    return opcodes;
  };
  install();
}
