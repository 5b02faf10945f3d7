// Numeric ids are echoed with the exact source text (geth echoes raw bytes).
import { rawIds } from '../src/raw-ids.js';
import { createRpcService } from '../src/index.js';
import { FakeStore } from './fake-store.js';

describe('rawIds scanner', () => {
  test('single object, nested values and tricky strings before the id', () => {
    expect(rawIds('{"params":[{"a":"]}\\"{["},[1,[2]]],"method":"x","id": 12345678901234567890 }')).toBe(
      '12345678901234567890',
    );
    expect(rawIds('{"id":1.0}')).toBe('1.0');
    expect(rawIds('{"jsonrpc":"2.0"}')).toBeUndefined();
    expect(rawIds('{}')).toBeUndefined();
    expect(rawIds('"text"')).toBeUndefined();
  });

  test('last duplicate wins and escaped keys are decoded, as JSON.parse does', () => {
    expect(rawIds('{"id":1,"id":2e0}')).toBe('2e0');
    expect(rawIds('{"\\u0069d":7}')).toBe('7');
    expect(rawIds('{"idx":7}')).toBeUndefined();
    expect(rawIds('{"i\\u0064":8}')).toBe('8');
  });

  test('escaped quotes and backslashes inside strings do not end them early', () => {
    // JSON text: {"a":"x\\","id":5} (a string ending in one escaped backslash)
    expect(rawIds('{"a":"x\\\\","id":5}')).toBe('5');
    // JSON text: {"a":"q\"id\":1","id":2} (an "id": inside a string value)
    expect(rawIds('{"a":"q\\"id\\":1","id":2}')).toBe('2');
    expect(rawIds('{"a":"\\\\\\"}","id":3}')).toBe('3');
    expect(JSON.parse('{"a":"\\\\\\"}","id":3}')).toEqual({ a: '\\"}', id: 3 });
  });

  test('random objects: the id text inserted is the id text found', () => {
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = ['a', '"', '\\', '{', '}', '[', ']', ',', ':', ' ', 'id', '\u00e9', '\n'];
    const str = (): string => Array.from({ length: rnd(8) }, () => alphabet[rnd(alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      switch (rnd(depth > 2 ? 3 : 5)) {
        case 0:
          return str();
        case 1:
          return rnd(1000) - 500;
        case 2:
          return rnd(2) === 0 ? null : true;
        case 3:
          return Array.from({ length: rnd(4) }, () => value(depth + 1));
        default:
          return Object.fromEntries(Array.from({ length: rnd(4) }, () => [str(), value(depth + 1)]));
      }
    };
    const ids = ['1', '-7', '1.0', '2e5', '12345678901234567890', '0.10', '"s\\"id"', 'null'];
    for (let n = 0; n < 2000; n++) {
      const members = Array.from(
        { length: rnd(5) },
        () => `${JSON.stringify(`${str()}x`)}:${JSON.stringify(value(0))}`,
      );
      const id = ids[rnd(ids.length)] as string;
      members.splice(rnd(members.length + 1), 0, `"id" :\t${id}`);
      const text = `{${members.join(' , ')}}`;
      expect(rawIds(text)).toBe(id);
    }
  });

  test('batch: one entry per element', () => {
    expect(rawIds(' [ {"id":1e2} , 5, {"x":{"id":3}}, {"id":"s"}, [] ] ')).toEqual([
      '1e2',
      undefined,
      undefined,
      '"s"',
      undefined,
    ]);
    expect(rawIds('[]')).toEqual([]);
  });
});

describe('ids echoed as given', () => {
  const svc = createRpcService(new FakeStore());
  test('numbers keep their source text, in single calls and batches', async () => {
    for (const id of ['12345678901234567890', '1.0', '1e2', '-0', '0.10']) {
      const body = (await svc.handle(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`)).body;
      expect(body).toBe(`{"jsonrpc":"2.0","id":${id},"result":"0x539"}`);
    }
    const batch = (
      await svc.handle(
        '[{"jsonrpc":"2.0","id":9007199254740993,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2.50,"method":"nope"}]',
      )
    ).body;
    expect(batch).toBe(
      '[{"jsonrpc":"2.0","id":9007199254740993,"result":"0x539"},{"jsonrpc":"2.0","id":2.50,"error":{"code":-32601,"message":"the method nope does not exist/is not available"}}]',
    );
  });
});
