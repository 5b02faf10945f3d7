// The EVM's halt errors in geth's words (core/vm/errors.go). Some of geth's texts name where the
// EVM stopped — the opcode an `invalid opcode` ran, the stack depth and the operands a `stack
// underflow` wanted — which @ethereumjs/evm leaves out of its error: they are read from its run
// state when it halted.

/** Where the EVM halted: the opcode it was running and its stack's depth before that opcode. */
export interface HaltPoint {
  opcode: number;
  stackLength: number;
}

/** The halt point of an EVM run state (undefined when there is none). */
export function haltPoint(runState: unknown): HaltPoint | undefined {
  const rs = runState as { opCode?: number; stack?: { length: number } } | undefined;
  if (rs?.opCode === undefined || rs.stack === undefined) return undefined;
  return { opcode: rs.opCode, stackLength: rs.stack.length };
}

/** The operands of the other opcodes that take any (opcode -> count). */
const INPUTS = new Map<number, number>([
  [0x1e, 1], // CLZ
  [0x20, 2], // KECCAK256
  [0x31, 1], // BALANCE
  [0x35, 1], // CALLDATALOAD
  [0x37, 3], // CALLDATACOPY
  [0x39, 3], // CODECOPY
  [0x3b, 1], // EXTCODESIZE
  [0x3c, 4], // EXTCODECOPY
  [0x3e, 3], // RETURNDATACOPY
  [0x3f, 1], // EXTCODEHASH
  [0x40, 1], // BLOCKHASH
  [0x49, 1], // BLOBHASH
  [0x50, 1], // POP
  [0x51, 1], // MLOAD
  [0x52, 2], // MSTORE
  [0x53, 2], // MSTORE8
  [0x54, 1], // SLOAD
  [0x55, 2], // SSTORE
  [0x56, 1], // JUMP
  [0x57, 2], // JUMPI
  [0x5c, 1], // TLOAD
  [0x5d, 2], // TSTORE
  [0x5e, 3], // MCOPY
  [0xf0, 3], // CREATE
  [0xf1, 7], // CALL
  [0xf2, 7], // CALLCODE
  [0xf3, 2], // RETURN
  [0xf4, 6], // DELEGATECALL
  [0xf5, 4], // CREATE2
  [0xfa, 6], // STATICCALL
  [0xfd, 2], // REVERT
  [0xff, 1], // SELFDESTRUCT
]);

/** The stack operands an opcode takes (geth's minStack), for the opcodes that take any. */
function stackInputs(op: number): number {
  if (op >= 0x80 && op <= 0x8f) return op - 0x7f; // DUP1..16
  if (op >= 0x90 && op <= 0x9f) return op - 0x8e; // SWAP1..16
  if (op >= 0xa0 && op <= 0xa4) return op - 0x9e; // LOG0..4
  if (op === 0x08 || op === 0x09) return 3; // ADDMOD, MULMOD
  if (op >= 0x01 && op <= 0x1d) return op === 0x15 || op === 0x19 ? 1 : 2; // ISZERO, NOT take one
  return INPUTS.get(op) ?? 0;
}

/** geth's name of an opcode the EVM refused: INVALID (0xfe), else geth's text for an undefined one. */
function invalidOpcodeName(op: number): string {
  return op === 0xfe ? 'INVALID' : `opcode 0x${op.toString(16)} not defined`;
}

/**
 * The EVM's halt error `e` in geth's words; `at`, where it halted, completes the texts that name
 * it (`invalid opcode: INVALID`, `stack underflow (0 <=> 2)`).
 */
export function haltMessage(e: string, at?: HaltPoint): string {
  if (e.startsWith('invalid JUMP')) return 'invalid jump destination'; // "invalid JUMP at <location>"
  switch (e) {
    case 'invalid opcode':
      return at === undefined ? e : `invalid opcode: ${invalidOpcodeName(at.opcode)}`;
    case 'stack underflow':
      return at === undefined ? e : `stack underflow (${at.stackLength} <=> ${stackInputs(at.opcode)})`;
    case 'stack overflow':
      // Every opcode that can overflow pushes one more than it pops: geth's limit for it is 1023.
      return 'stack limit reached 1024 (1023)';
    case 'static state change':
      return 'write protection';
    case 'code store out of gas':
      return 'contract creation code storage out of gas';
    default:
      return e;
  }
}
