// Streaming reader for geth's export format: RLP-encoded blocks, concatenated. Reads the file in
// chunks so a giant chain.rlp never sits in memory whole.
import { createReadStream } from 'node:fs';

/** Total length (prefix + payload) of the RLP item starting at `buf[at]`, or undefined if the prefix is incomplete. */
function itemLength(buf: Uint8Array, at: number, available: number): number | undefined {
  const b = buf[at];
  if (b === undefined || available < 1) return undefined;
  if (b < 0x80) return 1;
  if (b <= 0xb7) return 1 + (b - 0x80);
  if (b < 0xc0 || b > 0xf7) {
    const lenOfLen = b < 0xc0 ? b - 0xb7 : b - 0xf7;
    if (available < 1 + lenOfLen) return undefined;
    let len = 0;
    for (let i = 1; i <= lenOfLen; i++) len = len * 256 + (buf[at + i] as number);
    return 1 + lenOfLen + len;
  }
  return 1 + (b - 0xc0);
}

export interface RawBlock {
  /** Byte offset of this block in the file. */
  offset: number;
  bytes: Uint8Array;
}

export async function* readRlpBlocks(path: string): AsyncGenerator<RawBlock> {
  let buf = new Uint8Array(0);
  let fileOffset = 0; // file offset of buf[0]
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const c = chunk as Buffer;
    const merged = new Uint8Array(buf.length + c.length);
    merged.set(buf);
    merged.set(c, buf.length);
    buf = merged;
    let pos = 0;
    for (;;) {
      const len = itemLength(buf, pos, buf.length - pos);
      if (len === undefined || pos + len > buf.length) break;
      if ((buf[pos] as number) < 0xc0)
        throw new Error(`chain.rlp: offset ${fileOffset + pos}: expected an RLP list (a block)`);
      yield { offset: fileOffset + pos, bytes: buf.slice(pos, pos + len) };
      pos += len;
    }
    buf = buf.slice(pos);
    fileOffset += pos;
  }
  if (buf.length > 0)
    throw new Error(`chain.rlp: ${buf.length} trailing bytes at offset ${fileOffset} do not form a complete block`);
}
