import { InvalidParamsError, RpcError } from '../src/index.js';

describe('RpcError', () => {
  test('is an answer without a stack trace, and leaves the stack limit as it found it', async () => {
    const limit = Error.stackTraceLimit;
    const nested = async (depth: number): Promise<RpcError> =>
      depth === 0 ? new RpcError(3, 'execution reverted', '0x12') : nested(depth - 1);
    const e = await nested(8);
    expect(e.stack).toBe('RpcError: execution reverted');
    expect([e.code, e.message, e.data, e.name]).toEqual([3, 'execution reverted', '0x12', 'RpcError']);
    expect(new InvalidParamsError('bad').stack).toBe('InvalidParamsError: bad');
    expect(Error.stackTraceLimit).toBe(limit);
    // Other errors keep theirs: an unexpected failure is what a stack is for.
    expect(new Error('fault').stack?.split('\n').length).toBeGreaterThan(1);
  });
});
