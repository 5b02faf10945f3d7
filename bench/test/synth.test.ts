// The synthetic chain's hand-written encodings, re-derived with the general-purpose libraries: the
// generator's Keccak-256 against ethereum-cryptography's, and every header, transaction, body size,
// hash and bloom of the first blocks against @ethereumjs/rlp and an independent bloom.
import { Mismatches } from '@chainnode/testkit';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 as referenceKeccak } from 'ethereum-cryptography/keccak.js';
import { ChainGenerator, chainSpec, decodeBlocks, genesisInput, keccak256, keccak256Into } from '../src/synth.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function bloomOf(values: Uint8Array[]): Uint8Array {
  const bloom = new Uint8Array(256);
  for (const v of values) {
    const h = referenceKeccak(v);
    for (let i = 0; i < 6; i += 2) {
      const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
      bloom[255 - (bit >> 3)] = (bloom[255 - (bit >> 3)] as number) | (1 << (bit & 7));
    }
  }
  return bloom;
}

const decodeUint = (b: Uint8Array): number => b.reduce((n, x) => n * 256 + x, 0);

describe('synthetic chain encodings', () => {
  test('keccak256 equals ethereum-cryptography on every length up to 5 blocks of the rate, at any offset', () => {
    for (let len = 0; len <= 5 * 136 + 1; len++) {
      const b = new Uint8Array(len + 3);
      for (let i = 0; i < b.length; i++) b[i] = (i * 131 + len * 7 + 13) & 0xff;
      const data = b.subarray(3);
      expect(hex(keccak256(data))).toBe(hex(referenceKeccak(data)));
      const out = new Uint8Array(40);
      keccak256Into(b, 3, b.length, out, 5);
      expect(hex(out.subarray(5, 37))).toBe(hex(referenceKeccak(data)));
    }
    expect(hex(keccak256(new Uint8Array(0)))).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  });

  test('headers, transactions, body sizes, hashes and blooms of the generated blocks equal the general-purpose encodings', () => {
    for (const spec of [chainSpec('smoke'), chainSpec('standard', 0.004)]) {
      const gen = new ChainGenerator(spec);
      const genesis = genesisInput().block;
      let parent = genesis.hash;
      expect(hex(genesis.hash)).toBe(hex(referenceKeccak(genesis.headerRlp)));
      let nonce = 0;
      let logs = 0;
      let blocks = 0;
      // What differs, collected and asserted once: an expect per field of every block and
      // transaction (tens of thousands) took a third of this suite's CPU.
      const m = new Mismatches();
      const want = m.want;
      while (blocks < 600) {
        const buf = gen.nextBatch(97);
        if (buf === undefined) break;
        for (const b of decodeBlocks(buf)) {
          blocks++;
          m.at = `block ${blocks}`;
          want('number', b.number, BigInt(blocks));
          const fields = RLP.decode(b.headerRlp) as Uint8Array[];
          want('header fields', fields.length, 16);
          want('header', hex(RLP.encode(fields)), hex(b.headerRlp));
          want('parentHash', hex(fields[0] as Uint8Array), hex(parent));
          want('header number', decodeUint(fields[8] as Uint8Array), blocks);
          want('header bloom', hex(fields[6] as Uint8Array), hex(b.logsBloom));
          want('hash', hex(b.hash), hex(referenceKeccak(b.headerRlp)));
          parent = b.hash;
          const all = b.logs.flat();
          want('logsBloom', hex(b.logsBloom), hex(bloomOf(all.flatMap((l) => [l.address, ...l.topics]))));
          let gas = 0;
          b.body.transactions.forEach((raw, i) => {
            const tx = RLP.decode(raw) as Uint8Array[];
            want(`tx ${i}`, hex(RLP.encode(tx)), hex(raw));
            want(`tx ${i} nonce`, decodeUint(tx[0] as Uint8Array), nonce++);
            want(
              `tx ${i} to`,
              hex(tx[3] as Uint8Array),
              hex((b.logs[i] as { address: Uint8Array }[])[0]?.address as Uint8Array),
            );
            want(`tx ${i} hash`, hex(b.txHashes[i] as Uint8Array), hex(referenceKeccak(raw)));
            gas += 30_000 + 10_000 * (b.logs[i] as unknown[]).length;
            want(`tx ${i} cumulativeGasUsed`, b.receipts[i]?.cumulativeGasUsed, BigInt(gas));
          });
          want('gasUsed', decodeUint(fields[10] as Uint8Array), gas);
          // The block's RLP: [header fields, [legacy txs as lists], uncles []].
          want(
            'size',
            b.body.size,
            RLP.encode([fields, b.body.transactions.map((raw) => RLP.decode(raw) as Uint8Array[]), []]).length,
          );
          logs += all.length;
        }
      }
      expect(m.first()).toEqual([]);
      expect(blocks).toBe(Math.min(spec.blocks, 679)); // 7 batches of 97
      expect(gen.facts.logs).toBe(logs);
      expect(gen.facts.txs).toBe(nonce);
    }
  });
});
