// JsonText written on demand (ofAsciiWriter, what eth_getProof answers are; their replies through
// the envelope are checked in proof-text.test.ts): written into the caller's memory, made into
// bytes and text once only when asked or when a shared (memoised) text is written again, and a writer that writes other than the length it declared is an error, never a short reply.
import { FormatMemo, JsonText } from '../src/json-text.js';
import type { AsciiWriter } from '../src/json-text.js';

const writerOf = (text: string, declared = text.length): AsciiWriter & { calls: number } => {
  const w = {
    calls: 0,
    length: declared,
    write(out: Uint8Array, at: number): number {
      w.calls++;
      for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i); // past the end: dropped
      return at + text.length;
    },
  };
  return w;
};

test('a one-off text is written into the given memory each time, and made into bytes only when asked', () => {
  const w = writerOf('{"a":"0x01"}');
  const t = JsonText.ofAsciiWriter(w);
  expect(t.hasBytes).toBe(true);
  expect(t.byteLength()).toBe(12);
  for (let i = 0; i < 2; i++) {
    const out = Buffer.alloc(20, 0x20);
    expect(t.writeInto(out, 5)).toBe(17);
    expect(out.toString('latin1')).toBe('     {"a":"0x01"}   ');
  }
  expect(w.calls).toBe(2);
  expect(t.text).toBe('{"a":"0x01"}');
  expect(Buffer.from(t.bytes()).toString('latin1')).toBe('{"a":"0x01"}');
  const out = Buffer.alloc(12);
  t.writeInto(out, 0);
  expect(w.calls).toBe(3); // the text and the write after it came from the bytes made once
  expect(out.toString('latin1')).toBe('{"a":"0x01"}');
  expect(t.toJSON()).toEqual({ a: '0x01' });
});

test('a shared (memoised) text is written in place once, then from bytes kept on its second use', () => {
  const w = writerOf('{"a":"0x02"}');
  const t = JsonText.ofAsciiWriter(w, true);
  for (let i = 0; i < 4; i++) {
    const out = Buffer.alloc(16, 0x20);
    expect(t.writeInto(out, 2)).toBe(14);
    expect(out.toString('latin1')).toBe('  {"a":"0x02"}  ');
    expect(t.byteLength()).toBe(12);
    expect(t.hasBytes).toBe(true);
  }
  expect(w.calls).toBe(2); // once in place, once into the bytes kept for the later uses
  expect(t.text).toBe('{"a":"0x02"}');
  expect(w.calls).toBe(2);
});

test('a writer that writes another length than it declared fails', () => {
  expect(() => JsonText.ofAsciiWriter(writerOf('{"a":1}', 8)).writeInto(Buffer.alloc(16), 0)).toThrow(
    'writer wrote 7 bytes of 8',
  );
  expect(() => JsonText.ofAsciiWriter(writerOf('{"a":1}', 6)).bytes()).toThrow('writer wrote 7 bytes of 6');
});

test('FormatMemo: one text per (record, variant), kept on the record without changing its keys, JSON or equality', () => {
  const memo = new FormatMemo<{ a: number }, { a: number }>();
  const other = new FormatMemo<{ a: number }, { a: number }>();
  const record = { a: 1 };
  let formatted = 0;
  const format = (r: { a: number }): { a: number } => {
    formatted++;
    return { a: r.a };
  };
  const t = memo.get(record, 'x', format);
  expect(memo.get(record, 'x', format)).toBe(t);
  expect(memo.get(record, 'y', format)).not.toBe(t);
  expect(other.get(record, 'x', format)).not.toBe(t); // each memo its own
  expect(formatted).toBe(3);
  expect(t.text).toBe('{"a":1}');
  expect(memo.get({ a: 1 }, 'x', format)).not.toBe(t); // another object: another entry
  expect(Object.keys(record)).toEqual(['a']);
  expect(JSON.stringify(record)).toBe('{"a":1}');
  expect(record).toEqual({ a: 1 });
});
