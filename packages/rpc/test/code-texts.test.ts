// eth_getCode's texts by code hash (code-texts.ts): exactly JSON.stringify of the code's hex, the
// store read once per code while it is kept, and never more text kept than the budget, the least
// recently asked code out first (a generation at a time). The answers through the service are
// checked against each account's code hash in headers-accounts.test.ts.
import { toData } from '@chainnode/core';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { CodeTexts } from '../src/code-texts.js';

const code = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

test('a code text is its hex as JSON, made once while kept, within the budget, the least recently asked out first', async () => {
  // Each text of a 100-byte code is 204 bytes ("0x" + 200 hex digits, quoted): five fill one
  // generation of a 2,040-byte budget.
  const texts = new CodeTexts(2040);
  const codes = Array.from({ length: 10 }, (_, b) => code(100, b));
  const hashes = codes.map((c) => keccak256(c));
  const loads = codes.map(() => 0);
  const ask = async (i: number) => {
    const t = await texts.get(hashes[i] as Uint8Array, async () => {
      loads[i] = (loads[i] as number) + 1;
      return codes[i] as Uint8Array;
    });
    expect(t.text).toBe(JSON.stringify(toData(codes[i] as Uint8Array)));
    expect(t.byteLength()).toBe(204);
    expect(texts.size.bytes).toBeLessThanOrEqual(2040);
  };
  for (const i of [0, 1, 2, 3, 4, 0]) await ask(i);
  expect(loads).toEqual([1, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
  await ask(5); // the first generation is full: it becomes the older one
  await ask(1); // asked again: moved to the younger
  for (const i of [6, 7, 8, 9]) await ask(i); // the younger turns at 9: 0, 2, 3 and 4 go, 1 stays
  for (const i of [1, 0]) await ask(i);
  expect(loads).toEqual([2, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
  expect(texts.size.entries).toBeLessThanOrEqual(10);
});

test('a text larger than half the budget is answered and not kept; a failed load keeps nothing', async () => {
  const texts = new CodeTexts(100);
  const big = code(200, 7);
  expect((await texts.get(keccak256(big), async () => big)).text).toBe(JSON.stringify(toData(big)));
  expect(texts.size).toEqual({ entries: 0, bytes: 0 });
  const h = keccak256(code(1, 1));
  await expect(
    texts.get(h, async () => {
      throw new Error('store unavailable');
    }),
  ).rejects.toThrow('store unavailable');
  expect(texts.size).toEqual({ entries: 0, bytes: 0 });
});
