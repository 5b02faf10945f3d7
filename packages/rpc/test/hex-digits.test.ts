// The params decoders' hex reader against Buffer's own: every byte value in both cases of its
// letters, and every non-digit character of the first 256 code points (and one past them) in
// each half of a byte; and bytesToBigInt against BigInt of Buffer's hex.
import { bytesToBigInt, hexDigitsToBytes } from '@chainnode/core';

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

describe('bytesToBigInt', () => {
  test('every length 0-40 (both paths and the boundary between them), views at odd offsets, as BigInt of the hex', () => {
    let seed = 3;
    const rnd = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 24;
    };
    for (let len = 0; len <= 40; len++) {
      for (const fill of ['random', 'ff', '00'] as const) {
        const backing = new Uint8Array(len + 3);
        const b = backing.subarray(3); // a view that does not start its buffer
        for (let i = 0; i < len; i++) b[i] = fill === 'random' ? rnd() : fill === 'ff' ? 0xff : 0;
        const want = len === 0 ? 0n : BigInt(`0x${Buffer.from(b).toString('hex')}`);
        expect(bytesToBigInt(b)).toBe(want);
      }
    }
  });
});
