// The JSON text of contract code, by its code hash. Code is content-addressed: the code behind a
// hash is the same at every block and on every chain, so the text made for one eth_getCode
// answers every later one of that code without reading, copying or hex-encoding it again, and
// without JSON.stringify scanning a string of up to 49 KB (EIP-170's 24,576 bytes as hex). One
// per app thread (a module's state), bounded by the bytes it holds (core's WeightedLru: between
// half the budget and all of it once full; a text over half the budget is answered, not kept).
import type { Bytes, Hex } from '@chainnode/core';
import { WeightedLru, toData } from '@chainnode/core';
import { JsonText } from './json-text.js';

/** What the texts may hold, in bytes of text (about half as much code). */
export const CODE_TEXT_BUDGET = 8 * 1024 * 1024;

export class CodeTexts {
  private readonly texts: WeightedLru<string, JsonText<Hex>>;

  constructor(budget = CODE_TEXT_BUDGET) {
    this.texts = new WeightedLru(budget, (t) => t.byteLength());
  }

  /** The text of `code` (whose keccak is `codeHash`), made by `load` the first time. */
  async get(codeHash: Bytes, load: () => Promise<Bytes>): Promise<JsonText<Hex>> {
    const key = Buffer.from(codeHash.buffer, codeHash.byteOffset, codeHash.byteLength).toString('latin1');
    const hit = this.texts.get(key);
    if (hit !== undefined) return hit;
    const text = JsonText.ofAscii<Hex>(Buffer.from(`"${toData(await load())}"`, 'latin1'), true);
    this.texts.set(key, text);
    return text;
  }

  get size(): { entries: number; bytes: number } {
    const { entries, weight } = this.texts.size;
    return { entries, bytes: weight };
  }
}
