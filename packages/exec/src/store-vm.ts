// A VM over a StoreStateManager whose BLOCKHASH reads the store's canonical hashes (what eth_call's
// warm VMs and a re-executed block for traces both run on).
import type { Common } from '@ethereumjs/common';
import { createVM } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import type { Bytes } from '@chainnode/core';
import type { StoreStateManager } from './state.js';
import { tuneVm } from './evm-tuning.js';
import { loadKzgOnPointEvaluation } from './kzg.js';

export async function createStoreVM(
  common: Common,
  stateManager: StoreStateManager,
  hashOf: (number: bigint) => Promise<Bytes | undefined>,
): Promise<VM> {
  const vm = await createVM({
    common,
    stateManager,
    blockchain: {
      getBlock: async (n: number | bigint) => {
        const hash = (await hashOf(BigInt(n))) ?? new Uint8Array(32);
        return { hash: () => hash };
      },
      putBlock: async () => {},
      shallowCopy() {
        return this;
      },
    } as never,
  });
  await tuneVm(vm);
  loadKzgOnPointEvaluation(vm);
  return vm;
}
