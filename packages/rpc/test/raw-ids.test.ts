// Numeric ids are echoed with the exact source text (geth echoes raw bytes).
import { rawIds } from '../src/raw-ids.js';
import { createRpcService } from '../src/index.js';
import { FakeStore } from './fake-store.js';

describe('rawIds scanner', () => {
  test('single object, nested values and tricky strings before the id', () => {
    expect(rawIds('{"params":[{"a":"]}\\"{["},[1,[2]]],"method":"x","id": 12345678901234567890 }')).toBe('12345678901234567890');
    expect(rawIds('{"id":1.0}')).toBe('1.0');
    expect(rawIds('{"jsonrpc":"2.0"}')).toBeUndefined();
    expect(rawIds('{}')).toBeUndefined();
    expect(rawIds('"text"')).toBeUndefined();
  });

  test('last duplicate wins and escaped keys are decoded, as JSON.parse does', () => {
    expect(rawIds('{"id":1,"id":2e0}')).toBe('2e0');
    expect(rawIds('{"\\u0069d":7}')).toBe('7');
    expect(rawIds('{"idx":7}')).toBeUndefined();
  });

  test('batch: one entry per element', () => {
    expect(rawIds(' [ {"id":1e2} , 5, {"x":{"id":3}}, {"id":"s"}, [] ] ')).toEqual(['1e2', undefined, undefined, '"s"', undefined]);
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
    const batch = (await svc.handle('[{"jsonrpc":"2.0","id":9007199254740993,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2.50,"method":"nope"}]')).body;
    expect(batch).toBe(
      '[{"jsonrpc":"2.0","id":9007199254740993,"result":"0x539"},{"jsonrpc":"2.0","id":2.50,"error":{"code":-32601,"message":"the method nope does not exist/is not available"}}]',
    );
  });
});
