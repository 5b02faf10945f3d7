// One JSON-RPC call through the service, its reply parsed (the tests that read a reply's members),
// and a service over a private copy of a chain's shared import.
import type { ChainStore } from '@chainnode/core';
import { LevelChainStore } from '@chainnode/store';
import type { OpenChainStoreOptions } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';

export async function callRpc<T = { result?: unknown; error?: unknown }>(
  svc: RpcServiceApi,
  method: string,
  params: unknown[],
): Promise<T> {
  const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  return JSON.parse(reply.body ?? '') as T;
}

/**
 * A private copy of `chain`'s shared import, its store opened and a service over it; `close`
 * closes the store and removes the copy.
 */
export async function serviceOnCopy(
  chain: ChainName,
  options?: OpenChainStoreOptions,
): Promise<{
  store: LevelChainStore;
  svc: RpcServiceApi;
  close: () => Promise<void>;
}> {
  const copy = await datadirCopy(chain);
  const store = await LevelChainStore.open(copy.dir, options);
  const close = async (): Promise<void> => {
    await store.close();
    await copy.cleanup();
  };
  return { store, svc: createRpcService(store), close };
}

/** `store` with each answer of its `methods` handed to `seen` (the answer unchanged). */
export function observingCalls<S extends object>(
  store: S,
  methods: readonly string[],
  seen: (out: unknown) => void,
): S {
  return new Proxy(store, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      if (typeof key !== 'string' || !methods.includes(key)) return v.bind(target);
      return async (...args: unknown[]) => {
        const out = (await v.apply(target, args)) as unknown;
        seen(out);
        return out;
      };
    },
  });
}

/** `store` counting the by-block state reads (accountAtBlock, storageAtBlock) the flat history answered. */
export function countingHistoryReads(store: ChainStore, answered: { n: number }): ChainStore {
  return observingCalls(store, ['accountAtBlock', 'storageAtBlock'], (out) => {
    if (out !== undefined) answered.n++;
  });
}
