// Fault injection for outage drills: NODE_FAULT_INJECT=store-outage wraps the store so that
// every read throws StoreUnavailableError (what a broken disk or a closed LevelDB would give),
// which drives the failover path end to end against a real partner process.
// `store-outage:<network>[,<network>…]` limits it to those networks of a multi-network server
// (the others keep serving), for drills of one network's store failing.
import { StoreUnavailableError } from '@chainnode/core';
import type { ChainStore } from '@chainnode/core';

export const FAULT_ENV = 'NODE_FAULT_INJECT';

/** A store whose reads all fail; `info()` (genesis facts fixed in memory) and `close()` still work. */
export function outageStore(inner: ChainStore): ChainStore {
  const fail = (): Promise<never> =>
    Promise.reject(new StoreUnavailableError('store unavailable (injected fault: store-outage)'));
  return {
    info: () => inner.info(),
    head: fail,
    canonicalHash: fail,
    blockNumber: fail,
    header: fail,
    block: fail,
    uncle: fail,
    transaction: fail,
    logs: fail,
    storageAt: fail,
    proof: fail,
    receipts: fail,
    account: fail,
    code: fail,
    stateReader: () => ({
      account: () => {
        throw new StoreUnavailableError('store unavailable (injected fault: store-outage)');
      },
      storage: () => {
        throw new StoreUnavailableError('store unavailable (injected fault: store-outage)');
      },
      code: () => {
        throw new StoreUnavailableError('store unavailable (injected fault: store-outage)');
      },
    }),
    rawHeader: fail,
    rawBlock: fail,
    rawTransaction: fail,
    stateDiff: fail,
    close: () => inner.close(),
  };
}

/**
 * Applies the fault named by NODE_FAULT_INJECT (if any) to the store of `network` (undefined: a
 * server without networks, which only `store-outage` without a list affects); unknown names are
 * an error.
 */
export function applyFaultInjection(
  store: ChainStore,
  env: NodeJS.ProcessEnv = process.env,
  network?: string,
): ChainStore {
  const fault = env[FAULT_ENV];
  if (fault === undefined || fault === '') return store;
  if (fault === 'store-outage') return outageStore(store);
  const m = /^store-outage:([a-z0-9-]+(?:,[a-z0-9-]+)*)$/.exec(fault);
  if (m) return network !== undefined && (m[1] as string).split(',').includes(network) ? outageStore(store) : store;
  throw new Error(
    `${FAULT_ENV}=${fault}: unknown fault (expected "store-outage" or "store-outage:<network>[,<network>]")`,
  );
}
