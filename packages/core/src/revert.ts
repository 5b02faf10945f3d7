// geth's abi.UnpackRevert: the reason a revert's data gives (Error(string) or Panic(uint256)),
// for eth_call's errors and the traces' revertReason.
import type { Bytes } from './types.js';

const PANIC: Record<number, string> = {
  0: 'generic panic',
  1: 'assert(false)',
  17: 'arithmetic underflow or overflow',
  18: 'division or modulo by zero',
  33: 'enum overflow',
  34: 'invalid encoded storage byte array accessed',
  49: 'out-of-bounds array access; popping on an empty array',
  50: 'out-of-bounds access of an array or bytesN',
  65: 'out of memory',
  81: 'uninitialized function',
};

/** geth's abi.UnpackRevert: the reason of Error(string) or Panic(uint256) revert data. */
export function revertReason(d: Bytes): string | undefined {
  const sel = Buffer.from(d.subarray(0, 4)).toString('hex');
  if (sel === '08c379a0' && d.length >= 68) {
    const off = Number(BigInt(`0x${Buffer.from(d.subarray(4, 36)).toString('hex')}`));
    const at = 4 + off;
    if (at + 32 > d.length) return undefined;
    const len = Number(BigInt(`0x${Buffer.from(d.subarray(at, at + 32)).toString('hex')}`));
    if (at + 32 + len > d.length) return undefined;
    return Buffer.from(d.subarray(at + 32, at + 32 + len)).toString('utf8');
  }
  if (sel === '4e487b71' && d.length === 36) {
    const code = BigInt(`0x${Buffer.from(d.subarray(4)).toString('hex')}`);
    return PANIC[Number(code)] ?? `unknown panic code: 0x${code.toString(16)}`;
  }
  return undefined;
}
