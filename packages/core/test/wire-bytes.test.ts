// wireBytes: untrusted "0x" data to bytes in one pass, on both of its paths (its own loop up to
// 32 bytes, Buffer's native decoder above), against an independent decoder; every malformed
// input, wherever the bad character sits, is undefined, never a shorter value.
import { wireBytes } from '../src/hex.js';

const random = (n: number, seed: number): Uint8Array => {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
};
const hexOf = (b: Uint8Array): string => [...b].map((v) => v.toString(16).padStart(2, '0')).join('');

test('every length from 0 to 100 bytes, lower and upper case, decodes to the bytes, in memory of its own', () => {
  for (let n = 0; n <= 100; n++) {
    const bytes = random(n, n);
    for (const digits of [hexOf(bytes), hexOf(bytes).toUpperCase()]) {
      const got = wireBytes(`0x${digits}`);
      expect(got).toBeInstanceOf(Uint8Array);
      expect(Buffer.isBuffer(got)).toBe(false);
      expect([...(got as Uint8Array)]).toEqual([...bytes]);
      expect((got as Uint8Array).buffer.byteLength).toBe(n);
    }
  }
});

test('malformed data is undefined: not a string, no 0x, an odd count, a bad character anywhere', () => {
  for (const v of [
    undefined,
    null,
    12,
    ['0x00'],
    { x: 1 },
    '',
    '0',
    '00',
    '0X00',
    'x00',
    '0x0',
    '0x000',
    ' 0x00',
    '0x00 ',
  ])
    expect(wireBytes(v)).toBeUndefined();
  for (const n of [1, 8, 32, 33, 64, 300]) {
    const good = `0x${hexOf(random(n, 7))}`;
    for (let at = 2; at < good.length; at++)
      for (const bad of ['g', 'G', 'x', ' ', '-', 'é', '\u0660', '\0'])
        expect(wireBytes(good.slice(0, at) + bad + good.slice(at + 1))).toBeUndefined();
  }
});
