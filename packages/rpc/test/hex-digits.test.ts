// The params decoders' hex reader against Buffer's own: every byte value in both cases of its
// letters, and every non-digit character of the first 256 code points (and one past them) in
// each half of a byte.
import { hexDigitsToBytes } from '@chainnode/core';

describe('hexDigitsToBytes', () => {
  test('every byte value, lower and upper case, as Buffer decodes it', () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const lower = all.toString('hex');
    expect(Buffer.from(hexDigitsToBytes(lower) as Uint8Array).equals(all)).toBe(true);
    expect(Buffer.from(hexDigitsToBytes(lower.toUpperCase()) as Uint8Array).equals(all)).toBe(true);
    expect(hexDigitsToBytes('')).toEqual(new Uint8Array(0));
  });

  test('any non-digit in either half of a byte: undefined', () => {
    const digits = new Set('0123456789abcdefABCDEF');
    let rejected = 0;
    for (let c = 0; c < 257; c++) {
      const ch = String.fromCharCode(c === 256 ? 0x3000 : c);
      if (digits.has(ch)) continue;
      expect(hexDigitsToBytes(`aa${ch}0`)).toBeUndefined();
      expect(hexDigitsToBytes(`aa0${ch}`)).toBeUndefined();
      rejected++;
    }
    expect(rejected).toBe(257 - 22);
  });

  test('an odd count of digits is the caller’s error', () => {
    expect(() => hexDigitsToBytes('abc')).toThrow(RangeError);
  });
});
