// handle()'s onRequestError: called once per call answered with a request error before the
// middleware (the server charges those 5 credits each), never for calls the middleware saw, and
// the error object of an RpcError carrying Infura's event/details keeps their member order.
import { InvalidParamsError, RpcError } from '@chainnode/core';
import { createRpcService, toErrorObject } from '../src/index.js';
import type { CallMiddleware } from '../src/index.js';
import { FakeStore } from './fake-store.js';

const svc = createRpcService(new FakeStore());

async function count(
  text: string,
  mw?: CallMiddleware,
): Promise<{ errors: number; reached: number; body: string | undefined }> {
  let errors = 0;
  let reached = 0;
  const counting: CallMiddleware = (call, next) => {
    reached++;
    return mw ? mw(call, next) : next();
  };
  const r = await svc.handle(text, counting, () => errors++);
  return { errors, reached, body: r.body };
}

test('request errors before the middleware are reported once per call; handler errors are not', async () => {
  const cases: [string, { errors: number; reached: number }][] = [
    ['{not json', { errors: 1, reached: 0 }],
    ['[]', { errors: 1, reached: 0 }],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_nope","params":[]}', { errors: 1, reached: 0 }],
    ['{"jsonrpc":"1.0","id":1,"method":"eth_chainId","params":[]}', { errors: 1, reached: 0 }],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":{}}', { errors: 1, reached: 0 }],
    // Invalid params of a known method reach the middleware (which charges them itself).
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["zz",false]}', { errors: 0, reached: 1 }],
    // A batch: each call on its own.
    [
      '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_nope"},7,{"jsonrpc":"2.0","id":3,"method":"eth_blockNumber","params":[]}]',
      { errors: 2, reached: 2 },
    ],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}', { errors: 0, reached: 1 }],
  ];
  for (const [text, want] of cases) expect(await count(text)).toMatchObject(want);
});

test('an error with event and details goes out as code, event, message, details, data', async () => {
  const err = new RpcError(402, 'Payment Required', { resetsAt: '2026-11-24T00:00:00.000Z' });
  err.event = -33000;
  err.details = 'You have reached your daily credit limit.';
  expect(JSON.stringify(toErrorObject(err))).toBe(
    '{"code":402,"event":-33000,"message":"Payment Required","details":"You have reached your daily credit limit.","data":{"resetsAt":"2026-11-24T00:00:00.000Z"}}',
  );
  const refuse: CallMiddleware = async () => {
    throw err;
  };
  const r = await count('{"jsonrpc":"2.0","id":9,"method":"eth_blockNumber","params":[]}', refuse);
  expect(r.body).toBe(`{"jsonrpc":"2.0","id":9,"error":${JSON.stringify(toErrorObject(err))}}`);
  // Plain errors are unchanged.
  expect(toErrorObject(new InvalidParamsError('x'))).toEqual({ code: -32602, message: 'x' });
});
