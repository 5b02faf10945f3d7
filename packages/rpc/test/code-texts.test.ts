// eth_getCode's texts by code hash (code-texts.ts): exactly JSON.stringify of the code's hex, the
// store read once per code while it is kept, and never more text kept than the budget, the least
// recently asked code out first. The answers through the service are checked against each
// account's code hash in headers-accounts.test.ts.
import { toData } from '@chainnode/core';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { CodeTexts } from '../src/code-texts.js';

const code = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

test('a code text is its hex as JSON, made once and kept within the budget, least recently asked out first', async () => {
  // Each text of a 100-byte code is 204 bytes ("0x" + 200 hex digits, quoted): three fit in 700.
  const texts = new CodeTexts(700);
  const codes = [1, 2, 3, 4].map((b) => code(100, b));
  const hashes = codes.map((c) => keccak256(c));
  const loads = [0, 0, 0, 0];
  const ask = (i: number) =>
    texts.get(hashes[i] as Uint8Array, async () => {
      loads[i] = (loads[i] as number) + 1;
      return codes[i] as Uint8Array;
    });
  for (const i of [0, 1, 2]) {
    const t = await ask(i);
    expect(t.text).toBe(JSON.stringify(toData(codes[i] as Uint8Array)));
    expect(t.byteLength()).toBe(204);
  }
  expect(texts.size).toEqual({ entries: 3, bytes: 612 });
  await ask(0); // asked again: kept, now the most recent
  expect(loads).toEqual([1, 1, 1, 0]);
  await ask(3); // over the budget: code 1, the least recently asked, goes
  expect(texts.size).toEqual({ entries: 3, bytes: 612 });
  await ask(0);
  await ask(2);
  await ask(1);
  expect(loads).toEqual([1, 2, 1, 1]);
});

test('a text larger than the whole budget is answered and not kept; a failed load keeps nothing', async () => {
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
