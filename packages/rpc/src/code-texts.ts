// The JSON text of contract code, by its code hash. Code is content-addressed: the code behind a
// hash is the same at every block and on every chain, so the text made for one eth_getCode
// answers every later one of that code without reading, copying or hex-encoding it again, and
// without JSON.stringify scanning a string of up to 49 KB (EIP-170's 24,576 bytes as hex). One
// per app thread (a module's state), bounded by the bytes it holds, least recently asked first out.
import type { Bytes, Hex } from '@chainnode/core';
import { toData } from '@chainnode/core';
import { JsonText } from './json-text.js';

/** What the texts may hold, in bytes of text (about half as much code). */
export const CODE_TEXT_BUDGET = 8 * 1024 * 1024;

export class CodeTexts {
  private readonly texts = new Map<string, JsonText<Hex>>();
  private bytes = 0;

  constructor(private readonly budget = CODE_TEXT_BUDGET) {}

  /** The text of `code` (whose keccak is `codeHash`), made by `load` the first time. */
  async get(codeHash: Bytes, load: () => Promise<Bytes>): Promise<JsonText<Hex>> {
    const key = Buffer.from(codeHash.buffer, codeHash.byteOffset, codeHash.byteLength).toString('latin1');
    const hit = this.texts.get(key);
    if (hit !== undefined) {
      // Most recently asked last: the map's order is the eviction order.
      this.texts.delete(key);
      this.texts.set(key, hit);
      return hit;
    }
    const text = JsonText.ofAscii<Hex>(Buffer.from(`"${toData(await load())}"`, 'latin1'), true);
    const size = text.byteLength();
    if (size > this.budget) return text;
    this.texts.set(key, text);
    this.bytes += size;
    for (const [k, t] of this.texts) {
      if (this.bytes <= this.budget) break;
      this.texts.delete(k);
      this.bytes -= t.byteLength();
    }
    return text;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.texts.size, bytes: this.bytes };
  }
}
