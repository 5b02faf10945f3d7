// The rpc service's safe and finalized depths, as the settings hand them over (safeDepth,
// finalizedDepth), against a store whose head is block 9.
import { createRpcService, resolveConfig } from '@chainnode/rpc';
import type { RpcConfig } from '@chainnode/rpc';
import { fakeStore } from './helpers.js';

test('safeDepth and finalizedDepth decide what `safe` and `finalized` resolve to', async () => {
  const store = fakeStore(10); // head: block 9
  const numberOf = async (config: Partial<RpcConfig>, tag: string): Promise<string> => {
    const svc = createRpcService(store, resolveConfig(config));
    const out = await svc.handle(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [tag, false] }),
    );
    return (JSON.parse(out.body as string) as { result: { number: string } }).result.number;
  };
  expect(await numberOf({}, 'safe')).toBe('0x9');
  expect(await numberOf({}, 'finalized')).toBe('0x9');
  const deep = { safeDepth: 2, finalizedDepth: 7 };
  expect(await numberOf(deep, 'latest')).toBe('0x9');
  expect(await numberOf(deep, 'safe')).toBe('0x7');
  expect(await numberOf(deep, 'finalized')).toBe('0x2');
  // Clamped at genesis.
  expect(await numberOf({ finalizedDepth: 1_000 }, 'finalized')).toBe('0x0');
});
