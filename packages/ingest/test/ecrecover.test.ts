// The native sender recovery plugged into Common must agree with @ethereumjs/util's own JS
// ecrecover on every transaction type and signature form (legacy v 27/28, EIP-155, typed
// yParity), and refuse what it refuses.
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { createBlockFromBytesArray } from '@ethereumjs/block';
import type { BlockBytes } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { ecrecover as jsEcrecover } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { secp256k1 } from 'ethereum-cryptography/secp256k1.js';
import { chainDir } from '@chainnode/testkit';
import { readRlpBlocks } from '../src/index.js';
import { commonFromGenesis, readGenesisJson } from '../src/genesis.js';
import { nativeEcrecover } from '../src/ecrecover.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function sendersBothWays(dir: string, maxTxs: number): Promise<{ n: number; types: Set<string> }> {
  const genesis = await readGenesisJson(join(dir, 'genesis.json'));
  const native = commonFromGenesis(genesis);
  // The same chain config, but the library's default (JS) ecrecover; KZG from the native Common.
  const js = createCommonFromGethGenesis(genesis, { chain: 'custom', customCrypto: { kzg: native.customCrypto.kzg! } });
  let n = 0;
  const types = new Set<string>();
  for await (const raw of readRlpBlocks(join(dir, 'chain.rlp'))) {
    const values = RLP.decode(raw.bytes) as unknown as BlockBytes;
    const a = createBlockFromBytesArray(values, { common: native.copy(), setHardfork: true });
    const b = createBlockFromBytesArray(values, { common: js.copy(), setHardfork: true });
    a.transactions.forEach((tx, i) => {
      const other = b.transactions[i]!;
      expect(hex(tx.getSenderAddress().bytes)).toBe(hex(other.getSenderAddress().bytes));
      types.add(tx.type === 0 ? (tx.supports(155) ? 'legacy-155' : 'legacy-27/28') : `type-${tx.type}`);
      n++;
    });
    if (n >= maxTxs) break;
  }
  return { n, types };
}

describe('native ecrecover', () => {
  test('matches the JS ecrecover on random keys and messages, for v 27/28, EIP-155 v and yParity', () => {
    for (let i = 1; i <= 200; i++) {
      const priv = keccak256(Uint8Array.of(i, 7));
      const msg = keccak256(Uint8Array.of(i));
      const sig = secp256k1.sign(msg, priv);
      const r = sig.r.toString(16).padStart(64, '0');
      const s = sig.s.toString(16).padStart(64, '0');
      const rb = Buffer.from(r, 'hex');
      const sb = Buffer.from(s, 'hex');
      const rec = BigInt(sig.recovery);
      for (const [v, chainId] of [
        [rec, undefined],
        [27n + rec, undefined],
        [1337n * 2n + 35n + rec, 1337n],
      ] as [bigint, bigint | undefined][]) {
        expect(hex(nativeEcrecover(msg, v, rb, sb, chainId))).toBe(hex(jsEcrecover(msg, v, rb, sb, chainId)));
      }
    }
  });

  test('refuses an invalid v and an unparsable signature, as the JS one does', () => {
    const msg = keccak256(Uint8Array.of(1));
    const one = Uint8Array.of(1);
    expect(() => nativeEcrecover(msg, 29n, one, one)).toThrow();
    expect(() => jsEcrecover(msg, 29n, one, one)).toThrow();
    const n = Buffer.from('fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141', 'hex'); // r = curve order
    expect(() => nativeEcrecover(msg, 27n, n, one)).toThrow();
    expect(() => jsEcrecover(msg, 27n, n, one)).toThrow();
  });

  const shared = chainDir('execution-apis');
  (shared ? test : test.skip)(
    'recovers every sender of the execution-apis chain (all tx types) like the JS one',
    async () => {
      const { n, types } = await sendersBothWays(shared as string, Infinity);
      expect(n).toBe(249);
      expect([...types].sort()).toEqual(['legacy-155', 'legacy-27/28', 'type-1', 'type-2', 'type-3', 'type-4']);
    },
  );
  if (!shared) console.log('skipped: ../shared/chains/execution-apis not present');

  const fixtures = chainDir('fixtures');
  (fixtures ? test : test.skip)('recovers the first 1,000 fixture senders like the JS one', async () => {
    const { n } = await sendersBothWays(fixtures as string, 1000);
    expect(n).toBeGreaterThanOrEqual(1000);
  });
});
