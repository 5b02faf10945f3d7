// Pre-serialised results. A handler may return a JsonText instead of a plain value; the
// envelope splices its text into the reply as it is, so a hot answer is formatted and
// stringified once, not per call. The text must be exactly JSON.stringify of the value it
// stands for (toJSON keeps anything else that stringifies it correct, just slower).
//
// FormatMemo remembers the text per stored record *object*: the store hands out immutable
// records (and its caches hand out the same object again), so the text is a pure function of
// the object. The texts hang off the record itself (a non-enumerable property of each memo's own
// symbol), so they die with it and the memo is bounded by the store's own caches; a store that
// builds fresh objects per call simply never hits. Not a WeakMap: with one, every record of a
// random-access method that met the memo (a proof, a transaction) was promoted by the young
// collector and collected again as old garbage (measured in process on random proofs: ~2.5 MB
// per young collection with the WeakMap, none this way): the entry's value (the text, which
// references its record) stays alive through young collections.
import { chunksToBytes, writeChunk } from '@chainnode/core';
import type { AsciiChunk } from '@chainnode/core';

/**
 * ASCII JSON text of a known length, written on demand straight into memory the caller provides
 * (an eth_getProof answer: written into the transport's buffer, with no copy of its own).
 */
export interface AsciiWriter {
  readonly length: number;
  /** Writes the text at `at` of `out` (which has room for it); returns `at + length`. */
  write(out: Uint8Array, at: number): number;
}

export class JsonText<T = unknown> {
  /** Phantom: the type of the value the text encodes. */
  declare readonly __value?: T;
  private utf8: Uint8Array | undefined;
  private str: string | undefined;
  /** ofAsciiChunks: the bytes in chunks (joined into utf8 only if bytes() is asked). */
  private chunks: AsciiChunk[] | undefined;
  private chunksLength = 0;
  /** ofAsciiWriter: written where it is needed (bytes() makes and keeps them only if asked). */
  private writer: AsciiWriter | undefined;
  /** ofAsciiWriter: writeInto() has written the text once (see there). */
  private writtenOnce = false;
  /**
   * @param shared The same object answers many calls (a FormatMemo entry): worth keeping its
   *   UTF-8 bytes (see bytes()). A one-off text (a getLogs answer) is not.
   */
  constructor(
    text: string,
    readonly shared = false,
  ) {
    this.str = text;
  }

  /**
   * A text written as bytes by its formatter (ASCII only: the bytes are its UTF-8 and its
   * Latin-1 alike): bytes() hands them out as they are, and the string is made only if asked.
   */
  static ofAscii<T>(ascii: Uint8Array, shared = false): JsonText<T> {
    const t = new JsonText<T>('', shared);
    t.str = undefined;
    t.utf8 = ascii;
    return t;
  }

  /**
   * ofAscii, for a text in chunks that concatenated in order are the bytes (a chunk may be a
   * slice of an immutable file: read when the text is written or asked for).
   */
  static ofAsciiChunks<T>(chunks: AsciiChunk[], shared = false): JsonText<T> {
    const t = new JsonText<T>('', shared);
    t.str = undefined;
    t.chunks = chunks;
    for (const c of chunks) t.chunksLength += c.length;
    return t;
  }

  /**
   * ofAscii, for a text written on demand (AsciiWriter): writeInto() writes it where the
   * transport wants it (nothing allocated or kept for an answer given once); bytes() and text
   * make and keep a copy only when asked (a batch, a test), and so does a second writeInto() of a
   * shared text (a memoised answer asked again: copying kept bytes is cheaper than writing the
   * hex again, ~4 KB per proof).
   */
  static ofAsciiWriter<T>(writer: AsciiWriter, shared = false): JsonText<T> {
    const t = new JsonText<T>('', shared);
    t.str = undefined;
    t.writer = writer;
    return t;
  }

  get text(): string {
    if (this.str === undefined) {
      const b = this.bytes();
      this.str = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
    }
    return this.str;
  }

  /**
   * The text as UTF-8, encoded on first use and kept: a memoised answer is handed to the
   * socket as bytes, so the transport does not re-encode (and first flatten) the whole text
   * for every call.
   */
  bytes(): Uint8Array {
    if (this.utf8 === undefined && this.writer !== undefined) {
      const out = Buffer.allocUnsafeSlow(this.writer.length); // kept: its own memory, not the pool's
      this.written(this.writer, out, 0);
      this.utf8 = out;
      this.writer = undefined;
    }
    if (this.utf8 === undefined && this.chunks !== undefined) {
      this.utf8 = chunksToBytes(this.chunks);
      this.chunks = undefined;
    }
    return (this.utf8 ??= Buffer.from(this.text, 'utf8'));
  }

  /** Writes bytes() into `out` at `at` (chunks straight from where they are); returns the end. */
  writeInto(out: Uint8Array, at: number): number {
    if (this.writer !== undefined && !(this.shared && this.writtenOnce)) {
      this.writtenOnce = true;
      return this.written(this.writer, out, at);
    }
    if (this.chunks !== undefined) {
      for (const c of this.chunks) at = writeChunk(c, out, at);
      return at;
    }
    const b = this.bytes();
    out.set(b, at);
    return at + b.length;
  }

  private written(writer: AsciiWriter, out: Uint8Array, at: number): number {
    const end = writer.write(out, at);
    if (end !== at + writer.length) throw new Error(`JsonText: writer wrote ${end - at} bytes of ${writer.length}`);
    return end;
  }

  /**
   * Whether the text is (or is written) as bytes without being made a string first (written as
   * bytes, written on demand, or bytes() was asked once).
   */
  get hasBytes(): boolean {
    return this.utf8 !== undefined || this.chunks !== undefined || this.writer !== undefined;
  }

  /** The length of bytes(), without making them. */
  byteLength(): number {
    if (this.writer !== undefined) return this.writer.length;
    if (this.chunks !== undefined) return this.chunksLength;
    return this.utf8 !== undefined ? this.utf8.length : Buffer.byteLength(this.str as string, 'utf8');
  }

  static of<T>(value: T, shared = false): JsonText<T> {
    return new JsonText<T>(JSON.stringify(value), shared);
  }

  toJSON(): unknown {
    return JSON.parse(this.text) as unknown;
  }
}

/** JSON text of `v`, splicing pre-serialised results. */
export function stringifyResult(v: unknown): string {
  return v instanceof JsonText ? v.text : JSON.stringify(v);
}

export class FormatMemo<K extends object, V> {
  /** The property this memo keeps a record's texts under (a Map by variant). */
  private readonly slot = Symbol('FormatMemo');

  /** The text of `format(record)` under `variant`, computed once per (record, variant). */
  get(record: K, variant: string, format: (record: K) => V): JsonText<V> {
    return this.memo(record, variant, () => JsonText.of(format(record), true));
  }

  /** Like text(), for a writer that produces the text as ASCII bytes (JsonText.ofAscii). */
  ascii(record: K, variant: string, write: (record: K) => Uint8Array): JsonText<V> {
    return this.memo(record, variant, () => JsonText.ofAscii<V>(write(record), true));
  }

  /** Like ascii(), for a text written on demand wherever it is needed (JsonText.ofAsciiWriter). */
  writer(record: K, variant: string, make: (record: K) => AsciiWriter): JsonText<V> {
    return this.memo(record, variant, () => JsonText.ofAsciiWriter<V>(make(record), true));
  }

  /** Like get(), for a writer that produces the JSON text itself (exactly JSON.stringify of the value). */
  text(record: K, variant: string, write: (record: K) => string): JsonText<V> {
    return this.memo(record, variant, () => new JsonText<V>(write(record), true));
  }

  /** The text of (record, variant) if it was made already. */
  peek(record: K, variant: string): JsonText<V> | undefined {
    return (record as unknown as Record<symbol, Map<string, JsonText<V>> | undefined>)[this.slot]?.get(variant);
  }

  /** The memoised text of (record, variant), made by `make` the first time. */
  private memo(record: K, variant: string, make: () => JsonText<V>): JsonText<V> {
    const holder = record as unknown as Record<symbol, Map<string, JsonText<V>> | undefined>;
    let byVariant = holder[this.slot];
    if (byVariant === undefined) {
      byVariant = new Map();
      // Non-enumerable: the record's own keys, JSON and equality checks stay as they were.
      Object.defineProperty(record, this.slot, { value: byVariant });
    }
    let text = byVariant.get(variant);
    if (text === undefined) {
      text = make();
      byVariant.set(variant, text);
    }
    return text;
  }
}
