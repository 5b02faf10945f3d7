// An independent decoder of a geth chain export: only RLP, keccak, the MPT (for the
// transactions root), @ethereumjs/tx (for the signing hash) and libsecp256k1 (sender recovery,
// a second curve implementation next to the pure-JS one the generator signs with); nothing from
// the generator.
// It recomputes every hash and re-derives every consensus value (difficulty, gas limit, base
// fee) from the rules, throwing on the first violation, and reports what the chain contains.
// Run as a child process by chain-decode.test.ts (`node chain-decoder.js <fixtures dir>`
// prints the JSON report): jest's module sandbox makes this CPU-bound work about twice slower.
import { fileURLToPath } from 'node:url';
import { RLP } from '@ethereumjs/rlp';
import { createMPT } from '@ethereumjs/mpt';
import { type Common, createCommonFromGethGenesis, Hardfork } from '@ethereumjs/common';
import { createTxFromBlockBodyData } from '@ethereumjs/tx';
import { calculateSigRecovery } from '@ethereumjs/util';
import secp256k1 from 'secp256k1';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import { type GenesisFile, readChain, readGenesis, splitRlpItems } from './fixture-files.js';

function check(ok: boolean, msg: string): void {
  if (!ok) throw new Error(msg);
}

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
  check(
    diff < bound && h.gasLimit >= 5000n,
    `block ${h.number}: gas limit ${h.gasLimit} invalid after ${parent.gasLimit}`,
  );
  check(h.gasUsed <= h.gasLimit, `block ${h.number}: gasUsed above gasLimit`);
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

export interface DecodeReport {
  chainId: number;
  londonBlock: number;
  berlinBlock: unknown;
  ethash: unknown;
  blocks: number;
  txs: number;
  txTypes: { legacyUnprotected: number; legacyEip155: number; eip2930: number; eip1559: number };
  creations: number;
  plainTransfers: number;
  uncles: number;
  blocksByUncleCount: Record<string, number>;
  uncleDepths: Record<string, number>;
  emptyBlocks: number;
  preLondonBlocks: number;
  londonBlocks: number;
  senders: string[];
  unfundedSenders: string[];
  genesisHash: string;
  headHash: string;
  totalDifficulty: string;
}

/** What the decoder has seen so far, and the rules it checks against. */
interface Decoding {
  london: bigint;
  chainId: bigint;
  common: Common;
  canonical: Map<bigint, Header>;
  canonicalHashes: Set<string>;
  seenUncles: Set<string>;
  txTypes: DecodeReport['txTypes'];
  txs: number;
  creations: number;
  plainTransfers: number;
  uncles: number;
  emptyBlocks: number;
  unclesPerBlock: Record<string, number>;
  uncleDepths: Record<string, number>;
  senders: Set<string>;
  preLondonBlocks: number;
  londonBlocks: number;
}

export async function decodeChain(dir?: string): Promise<DecodeReport> {
  const genesis = readGenesis(dir);
  const blocks = splitRlpItems(readChain(dir));
  const common = createCommonFromGethGenesis(genesis as never, {
    chain: 'fixture-decoder',
    customCrypto: { ecrecover: recoverPublicKey },
  });
  common.setHardfork(Hardfork.London);

  const genesisHdr = await genesisHeader(genesis);
  const d: Decoding = {
    london: BigInt(genesis.config.londonBlock),
    chainId: BigInt(genesis.config.chainId),
    common,
    canonical: new Map<bigint, Header>([[0n, genesisHdr]]),
    canonicalHashes: new Set<string>([genesisHdr.hash]),
    seenUncles: new Set<string>(),
    txTypes: { legacyUnprotected: 0, legacyEip155: 0, eip2930: 0, eip1559: 0 },
    txs: 0,
    creations: 0,
    plainTransfers: 0,
    uncles: 0,
    emptyBlocks: 0,
    unclesPerBlock: {},
    uncleDepths: {},
    senders: new Set<string>(),
    preLondonBlocks: 0,
    londonBlocks: 0,
  };
  let parent = genesisHdr;
  let td = genesisHdr.difficulty;
  for (const [i, encoded] of blocks.entries()) {
    const where = `block #${i + 1} (file item ${i})`;
    const decoded = RLP.decode(encoded) as Nested;
    check(Buffer.from(RLP.encode(decoded)).equals(Buffer.from(encoded)), `${where}: not canonical RLP`);
    const [headerItem, txItems, uncleItems, ...rest] = asList(decoded, where);
    check(rest.length === 0, `${where}: ${3 + rest.length} items, expected [header, txs, uncles]`);
    const h = parseHeader(headerItem!, `${where} header`);
    checkHeader(d, h, parent, i, where);
    const newTd = td + h.difficulty;
    check(newTd > td, `${where}: total difficulty does not grow`);
    td = newTd;
    checkBaseFee(d, h, parent, where);
    checkUncles(d, h, uncleItems, where);
    await checkTransactions(d, h, txItems, where);
    d.canonical.set(h.number, h);
    d.canonicalHashes.add(h.hash);
    parent = h;
  }

  const funded = new Set(Object.keys(genesis.alloc).map((a) => a.toLowerCase()));
  return {
    chainId: genesis.config.chainId,
    londonBlock: genesis.config.londonBlock,
    berlinBlock: genesis.config['berlinBlock'],
    ethash: genesis.config['ethash'],
    blocks: blocks.length,
    txs: d.txs,
    txTypes: d.txTypes,
    creations: d.creations,
    plainTransfers: d.plainTransfers,
    uncles: d.uncles,
    blocksByUncleCount: d.unclesPerBlock,
    uncleDepths: d.uncleDepths,
    emptyBlocks: d.emptyBlocks,
    preLondonBlocks: d.preLondonBlocks,
    londonBlocks: d.londonBlocks,
    senders: [...d.senders],
    unfundedSenders: [...d.senders].filter((s) => !funded.has(s)),
    genesisHash: genesisHdr.hash,
    headHash: parent.hash,
    totalDifficulty: td.toString(),
  };
}

/** Numbering, parent links, timestamps, difficulty, gas limit. */
function checkHeader(d: Decoding, h: Header, parent: Header, i: number, where: string): void {
  check(h.number === BigInt(i + 1), `${where}: header number ${h.number}`);
  check(
    h.parentHash === parent.hash,
    `${where}: parentHash ${h.parentHash} is not the hash of the previous block ${parent.hash}`,
  );
  check(h.timestamp > parent.timestamp, `${where}: timestamp does not increase`);
  check(
    h.difficulty === expectedDifficulty(h, parent),
    `${where}: difficulty ${h.difficulty}, expected ${expectedDifficulty(h, parent)}`,
  );
  checkGasLimit(h, parent, d.london);
  check(h.difficulty > 0n, `${where}: zero difficulty`);
}

/** The London boundary: no base fee before it, EIP-1559's from it on. */
function checkBaseFee(d: Decoding, h: Header, parent: Header, where: string): void {
  if (h.number < d.london) {
    check(h.baseFee === undefined, `${where}: base fee before London`);
    d.preLondonBlocks++;
  } else {
    const expected = h.number === d.london ? 1_000_000_000n : nextBaseFee(parent);
    check(h.baseFee === expected, `${where}: base fee ${h.baseFee}, expected ${expected}`);
    d.londonBlocks++;
  }
}

function checkUncles(d: Decoding, h: Header, uncleItems: Nested | undefined, where: string): void {
  const uncleList = asList(uncleItems, `${where} uncles`);
  check(hex(h.uncleHash) === hex(keccak256(RLP.encode(uncleList))), `${where}: uncles hash does not match the uncles`);
  d.unclesPerBlock[uncleList.length] = (d.unclesPerBlock[uncleList.length] ?? 0) + 1;
  for (const [j, u] of uncleList.entries()) {
    const uw = `${where} uncle ${j}`;
    const uh = parseHeader(u, uw);
    const depth = Number(h.number - uh.number);
    check(depth >= 1 && depth <= 6, `${uw}: depth ${depth} outside 1..6`);
    d.uncleDepths[depth] = (d.uncleDepths[depth] ?? 0) + 1;
    const uncleParent = d.canonical.get(uh.number - 1n);
    check(uncleParent !== undefined && uh.parentHash === uncleParent.hash, `${uw}: parent is not a canonical ancestor`);
    check(!d.canonicalHashes.has(uh.hash), `${uw}: is itself canonical`);
    check(!d.seenUncles.has(uh.hash), `${uw}: included twice`);
    d.seenUncles.add(uh.hash);
    check(uh.difficulty === expectedDifficulty(uh, uncleParent!), `${uw}: difficulty not valid for its parent`);
    check(uh.timestamp > uncleParent!.timestamp, `${uw}: timestamp not after its parent`);
    checkGasLimit(uh, uncleParent!, d.london);
    check((uh.baseFee === undefined) === uh.number < d.london, `${uw}: base fee presence wrong for its height`);
    d.uncles++;
  }
}

/**
 * The signer's public key (64 bytes, no 0x04 prefix) through libsecp256k1, for Common's
 * `customCrypto.ecrecover` hook (the contract of @ethereumjs/util's ecrecover). Native recovery:
 * the pure-JS curve took most of this decoder's CPU.
 */
function recoverPublicKey(msgHash: Bytes, v: bigint, r: Bytes, s: Bytes, chainId?: bigint): Bytes {
  const recovery = Number(calculateSigRecovery(v, chainId));
  check(recovery === 0 || recovery === 1, `signature v ${v} gives no recovery id`);
  const rs = new Uint8Array(64);
  rs.set(r, 32 - r.length);
  rs.set(s, 64 - s.length);
  return secp256k1.ecdsaRecover(rs, recovery, msgHash, false).subarray(1);
}

/** Transactions: types, senders, transactions root. */
async function checkTransactions(d: Decoding, h: Header, txItems: Nested | undefined, where: string): Promise<void> {
  const txList = asList(txItems, `${where} txs`);
  if (txList.length === 0) d.emptyBlocks++;
  const trie = await createMPT();
  for (const [j, item] of txList.entries()) {
    const value = countTxType(d, h, item, `${where} tx ${j}`);
    await trie.put(RLP.encode(unpadded(BigInt(j))), value);
    const tx = createTxFromBlockBodyData(item as never, { common: d.common });
    d.senders.add(tx.getSenderAddress().toString());
    if (tx.to === undefined) d.creations++;
    else if (tx.data.length === 0) d.plainTransfers++;
    d.txs++;
  }
  check(hex(trie.root()) === hex(h.txRoot), `${where}: transactions root does not match the transactions`);
}

/** Counts the transaction's type (checking its v or its fork) and returns its encoding. */
function countTxType(d: Decoding, h: Header, item: Nested, tw: string): Bytes {
  if (item instanceof Uint8Array) {
    const type = item[0];
    if (type === 1) d.txTypes.eip2930++;
    else if (type === 2) {
      check(h.number >= d.london, `${tw}: EIP-1559 transaction before London`);
      d.txTypes.eip1559++;
    } else throw new Error(`${tw}: unexpected type ${type}`);
    return item;
  }
  const fields = asList(item, 'legacy tx');
  check(fields.length === 9, `${tw}: legacy tx with ${fields.length} fields`);
  const v = toBig(asBytes(fields[6], 'v'));
  if (v === 27n || v === 28n) d.txTypes.legacyUnprotected++;
  else {
    check(
      v === d.chainId * 2n + 35n || v === d.chainId * 2n + 36n,
      `${tw}: v ${v} is neither 27/28 nor EIP-155 for chain ${d.chainId}`,
    );
    d.txTypes.legacyEip155++;
  }
  return RLP.encode(item);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  decodeChain(process.argv[2])
    .then((report) => process.stdout.write(`${JSON.stringify(report)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    });
}
