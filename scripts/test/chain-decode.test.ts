// An independent decoder of fixtures/chain.rlp: only RLP, keccak, the MPT (for the
// transactions root) and @ethereumjs/tx (for sender recovery). Nothing from the generator.
// It recomputes every hash and re-derives every consensus value (difficulty, gas limit, base
// fee) from the rules, then asserts what the chain must contain.
import { RLP } from '@ethereumjs/rlp';
import { createMPT } from '@ethereumjs/mpt';
import { createCommonFromGethGenesis, Hardfork } from '@ethereumjs/common';
import { createTxFromBlockBodyData } from '@ethereumjs/tx';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import { type GenesisFile, readChain, readGenesis, splitRlpItems } from './fixture-files.js';

type Bytes = Uint8Array;
type Nested = Bytes | Nested[];

const EMPTY_LIST_HASH = keccak256(RLP.encode([]));
const EMPTY_TRIE_ROOT = keccak256(RLP.encode(new Uint8Array(0)));
const MIN_DIFFICULTY = 131072n;

function toBig(b: Bytes): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

function hex(b: Bytes): string {
  return `0x${Buffer.from(b).toString('hex')}`;
}

function fromHex(h: string): Bytes {
  const body = h.replace(/^0x/, '');
  return Uint8Array.from(Buffer.from(body.length % 2 === 1 ? `0${body}` : body, 'hex'));
}

function unpadded(v: bigint): Bytes {
  if (v === 0n) return new Uint8Array(0);
  return fromHex(v.toString(16));
}

function asBytes(x: Nested | undefined, what: string): Bytes {
  if (!(x instanceof Uint8Array)) throw new Error(`${what}: expected a byte string`);
  return x;
}

function asList(x: Nested | undefined, what: string): Nested[] {
  if (!Array.isArray(x)) throw new Error(`${what}: expected a list`);
  return x;
}

interface Header {
  raw: Bytes[];
  hash: string;
  parentHash: string;
  uncleHash: Bytes;
  txRoot: Bytes;
  difficulty: bigint;
  number: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  timestamp: bigint;
  baseFee: bigint | undefined;
}

function parseHeader(x: Nested, what: string): Header {
  const raw = asList(x, what).map((f, i) => asBytes(f, `${what} field ${i}`));
  if (raw.length !== 15 && raw.length !== 16) throw new Error(`${what}: ${raw.length} fields, expected 15 or 16`);
  return {
    raw,
    hash: hex(keccak256(RLP.encode(raw))),
    parentHash: hex(raw[0]!),
    uncleHash: raw[1]!,
    txRoot: raw[4]!,
    difficulty: toBig(raw[7]!),
    number: toBig(raw[8]!),
    gasLimit: toBig(raw[9]!),
    gasUsed: toBig(raw[10]!),
    timestamp: toBig(raw[11]!),
    baseFee: raw.length === 16 ? toBig(raw[15]!) : undefined,
  };
}

/** Byzantium-and-later ethash difficulty (EIP-100); the bomb is zero this early in the chain. */
function expectedDifficulty(h: Header, parent: Header): bigint {
  const parentHasUncles = !Buffer.from(parent.uncleHash).equals(Buffer.from(EMPTY_LIST_HASH));
  let adj = (parentHasUncles ? 2n : 1n) - (h.timestamp - parent.timestamp) / 9n;
  if (adj < -99n) adj = -99n;
  const d = parent.difficulty + (parent.difficulty / 2048n) * adj;
  return d < MIN_DIFFICULTY ? MIN_DIFFICULTY : d;
}

function checkGasLimit(h: Header, parent: Header, london: bigint): void {
  const parentLimit = h.number === london ? parent.gasLimit * 2n : parent.gasLimit;
  const bound = parentLimit / 1024n;
  const diff = h.gasLimit > parentLimit ? h.gasLimit - parentLimit : parentLimit - h.gasLimit;
  if (diff >= bound || h.gasLimit < 5000n) throw new Error(`block ${h.number}: gas limit ${h.gasLimit} invalid after ${parent.gasLimit}`);
  if (h.gasUsed > h.gasLimit) throw new Error(`block ${h.number}: gasUsed above gasLimit`);
}

/** EIP-1559 base fee of the child of `parent` (parent is a London block). */
function nextBaseFee(parent: Header): bigint {
  const base = parent.baseFee!;
  const target = parent.gasLimit / 2n;
  if (parent.gasUsed === target) return base;
  if (parent.gasUsed > target) {
    const delta = (base * (parent.gasUsed - target)) / target / 8n;
    return base + (delta > 1n ? delta : 1n);
  }
  return base - (base * (target - parent.gasUsed)) / target / 8n;
}

async function genesisHeader(g: GenesisFile): Promise<Header> {
  const trie = await createMPT({ useKeyHashing: true });
  for (const [addr, acct] of Object.entries(g.alloc)) {
    let storageRoot = EMPTY_TRIE_ROOT;
    if (acct.storage !== undefined) {
      const st = await createMPT({ useKeyHashing: true });
      for (const [k, v] of Object.entries(acct.storage)) {
        const key = new Uint8Array(32);
        const kb = fromHex(k);
        key.set(kb, 32 - kb.length);
        if (toBig(fromHex(v)) !== 0n) await st.put(key, RLP.encode(unpadded(toBig(fromHex(v)))));
      }
      storageRoot = st.root();
    }
    const codeHash = keccak256(acct.code === undefined ? new Uint8Array(0) : fromHex(acct.code));
    const body = [unpadded(BigInt(acct.nonce ?? 0)), unpadded(BigInt(acct.balance)), storageRoot, codeHash];
    await trie.put(fromHex(addr), RLP.encode(body));
  }
  const header = [
    new Uint8Array(32),
    EMPTY_LIST_HASH,
    fromHex(g.coinbase),
    trie.root(),
    EMPTY_TRIE_ROOT,
    EMPTY_TRIE_ROOT,
    new Uint8Array(256),
    unpadded(BigInt(g.difficulty)),
    new Uint8Array(0),
    unpadded(BigInt(g.gasLimit)),
    new Uint8Array(0),
    unpadded(BigInt(g.timestamp)),
    fromHex(g.extraData),
    fromHex(g.mixHash),
    fromHex(g.nonce),
  ];
  return parseHeader(header, 'genesis header');
}

describe('fixtures/chain.rlp decoded independently', () => {
  const genesis = readGenesis();
  const london = BigInt(genesis.config.londonBlock);
  const chainId = BigInt(genesis.config.chainId);
  const blocks = splitRlpItems(readChain());

  it('has a fork schedule with London after genesis and a non-mainnet chain id', () => {
    expect(chainId).not.toBe(1n);
    expect(london).toBeGreaterThan(0n);
    expect(genesis.config['berlinBlock']).toBe(0);
    expect(genesis.config['ethash']).toEqual({});
  });

  it('links, hashes and validates every block, uncle and transaction', async () => {
    const common = createCommonFromGethGenesis(genesis as never, { chain: 'fixture-decoder' });
    common.setHardfork(Hardfork.London);

    const genesisHdr = await genesisHeader(genesis);
    const canonical = new Map<bigint, Header>([[0n, genesisHdr]]);
    const canonicalHashes = new Set<string>([genesisHdr.hash]);
    const seenUncles = new Set<string>();
    let parent = genesisHdr;
    let td = genesisHdr.difficulty;

    const txTypes = { legacyUnprotected: 0, legacyEip155: 0, eip2930: 0, eip1559: 0 };
    let txs = 0;
    let creations = 0;
    let plainTransfers = 0;
    let uncles = 0;
    let emptyBlocks = 0;
    const unclesPerBlock = new Map<number, number>();
    const uncleDepths = new Map<number, number>();
    const senders = new Set<string>();
    let preLondonBlocks = 0;
    let londonBlocks = 0;

    for (const [i, encoded] of blocks.entries()) {
      const decoded = RLP.decode(encoded) as Nested;
      expect(Buffer.from(RLP.encode(decoded)).equals(Buffer.from(encoded))).toBe(true); // canonical encoding
      const [headerItem, txItems, uncleItems, ...rest] = asList(decoded, `block ${i}`);
      expect(rest).toHaveLength(0);
      const h = parseHeader(headerItem!, `block ${i} header`);

      // numbering, parent links, timestamps
      expect(h.number).toBe(BigInt(i + 1));
      expect(h.parentHash).toBe(parent.hash);
      expect(h.timestamp).toBeGreaterThan(parent.timestamp);
      expect(h.difficulty).toBe(expectedDifficulty(h, parent));
      checkGasLimit(h, parent, london);
      expect(h.difficulty).toBeGreaterThan(0n);
      const newTd = td + h.difficulty;
      expect(newTd).toBeGreaterThan(td);
      td = newTd;

      // London boundary
      if (h.number < london) {
        expect(h.baseFee).toBeUndefined();
        preLondonBlocks++;
      } else {
        expect(h.baseFee).toBeDefined();
        if (h.number === london) expect(h.baseFee).toBe(1_000_000_000n);
        else expect(h.baseFee).toBe(nextBaseFee(parent));
        londonBlocks++;
      }

      // uncles
      const uncleList = asList(uncleItems, `block ${i} uncles`);
      expect(hex(h.uncleHash)).toBe(hex(keccak256(RLP.encode(uncleList))));
      unclesPerBlock.set(uncleList.length, (unclesPerBlock.get(uncleList.length) ?? 0) + 1);
      for (const [j, u] of uncleList.entries()) {
        const uh = parseHeader(u, `block ${h.number} uncle ${j}`);
        const depth = Number(h.number - uh.number);
        expect(depth).toBeGreaterThanOrEqual(1);
        expect(depth).toBeLessThanOrEqual(6);
        uncleDepths.set(depth, (uncleDepths.get(depth) ?? 0) + 1);
        const uncleParent = canonical.get(uh.number - 1n);
        if (uncleParent === undefined) throw new Error(`uncle ${uh.hash}: parent height ${uh.number - 1n} unknown`);
        expect(uh.parentHash).toBe(uncleParent.hash); // its parent is a canonical ancestor
        expect(canonicalHashes.has(uh.hash)).toBe(false); // it is not itself canonical
        expect(seenUncles.has(uh.hash)).toBe(false); // not included twice
        seenUncles.add(uh.hash);
        expect(uh.difficulty).toBe(expectedDifficulty(uh, uncleParent));
        expect(uh.timestamp).toBeGreaterThan(uncleParent.timestamp);
        checkGasLimit(uh, uncleParent, london);
        expect(uh.baseFee === undefined).toBe(uh.number < london);
        uncles++;
      }

      // transactions: types, senders, transactions root
      const txList = asList(txItems, `block ${i} txs`);
      if (txList.length === 0) emptyBlocks++;
      const trie = await createMPT();
      for (const [j, item] of txList.entries()) {
        let value: Bytes;
        if (item instanceof Uint8Array) {
          value = item;
          const type = item[0];
          if (type === 1) txTypes.eip2930++;
          else if (type === 2) {
            expect(h.number).toBeGreaterThanOrEqual(london);
            txTypes.eip1559++;
          } else throw new Error(`block ${h.number} tx ${j}: unexpected type ${type}`);
        } else {
          value = RLP.encode(item);
          const fields = asList(item, 'legacy tx');
          expect(fields).toHaveLength(9);
          const v = toBig(asBytes(fields[6], 'v'));
          if (v === 27n || v === 28n) txTypes.legacyUnprotected++;
          else {
            expect([chainId * 2n + 35n, chainId * 2n + 36n]).toContain(v);
            txTypes.legacyEip155++;
          }
        }
        await trie.put(RLP.encode(unpadded(BigInt(j))), value);
        const tx = createTxFromBlockBodyData(item as never, { common });
        senders.add(tx.getSenderAddress().toString());
        if (tx.to === undefined) creations++;
        else if (tx.data.length === 0) plainTransfers++;
        txs++;
      }
      expect(hex(trie.root())).toBe(hex(h.txRoot));

      canonical.set(h.number, h);
      canonicalHashes.add(h.hash);
      parent = h;
    }

    // What the chain must contain (issue 2).
    expect(blocks.length).toBeGreaterThanOrEqual(1500);
    expect(txs).toBeGreaterThanOrEqual(8000);
    expect(uncles).toBeGreaterThanOrEqual(150);
    for (const n of [0, 1, 2]) expect(unclesPerBlock.get(n) ?? 0).toBeGreaterThan(0);
    for (let d = 1; d <= 6; d++) expect(uncleDepths.get(d) ?? 0).toBeGreaterThan(0);
    expect(preLondonBlocks).toBeGreaterThan(0);
    expect(londonBlocks).toBeGreaterThan(0);
    expect(emptyBlocks).toBeGreaterThan(0);
    expect(txTypes.legacyUnprotected).toBeGreaterThan(0);
    expect(txTypes.legacyEip155).toBeGreaterThan(0);
    expect(txTypes.eip2930).toBeGreaterThan(0);
    expect(txTypes.eip1559).toBeGreaterThan(0);
    expect(creations).toBeGreaterThan(0);
    expect(plainTransfers).toBeGreaterThan(0);
    expect(senders.size).toBeGreaterThanOrEqual(50);
    // Every sender must be funded in genesis (no one sends from an unfunded account).
    const funded = new Set(Object.keys(genesis.alloc).map((a) => a.toLowerCase()));
    for (const s of senders) expect(funded.has(s)).toBe(true);
  }, 900_000);
});
