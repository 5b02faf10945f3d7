// The scaled chain of the varied bench (`--chain scaled`): a chain larger than every cache of the
// store and the rpc layer (blocks, headers, transactions, accounts, slots, trie nodes), BUILT here
// with anvil 1.7.1 as the block builder, and the bench's own model of everything in it.
//
// anvil runs with `--init <the bench's genesis.json> --hardfork cancun --accounts 4 --no-create2
// --no-mining --order fifo`: the genesis alloc funds exactly anvil's 4 dev accounts (the public
// test mnemonic's first keys, which the bench derives to sign), so anvil's genesis state equals the
// alloc and @ethereumjs/vm re-executes its blocks to the same roots (../shared/research/follow.md).
// Block 1 deploys CONTRACTS copies of a small contract; every later block holds TRANSFERS transfers
// of a unique value to fresh addresses (a large account trie) and CALLS calls, each writing
// NEW_SLOTS new slots plus one overwrite of an older slot of the same contract with values the
// bench draws, each write also emitting LOG2(topics [EVENT, slot], data value). Every transaction
// is signed here (ethers 6), sent raw, and the block mined with `evm_mine <timestamp>`.
//
// The model (what the bench knows independently of both servers): each block's tx hashes (keccak
// of the raw bytes signed here), its header hash recomputed here from the header fields, checked
// against anvil's and chained by parentHash, and its transactionsRoot recomputed from the raw
// bytes; every slot's value at every block; every fresh account's balance at every block; every
// log. chainnode then imports the chain from anvil (`node-cli sync --from <anvil url> --genesis`),
// so both servers hold the same blocks (same hashes).
import { HDNodeWallet, Signature, Transaction, getCreateAddress } from 'ethers';
import { RLP } from '@ethereumjs/rlp';
import { createMPT } from '@ethereumjs/mpt';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cancunGenesis } from '@chainnode/testkit';
import { anvilFlags } from './anvil.js';
import { batchClient, type Rpc } from './children.js';
import { Rng, keccak256 } from './synth.js';

export const MNEMONIC = 'test test test test test test test test test test test junk';
export const CHAIN_ID = 31337;
export const SENDERS = 4;
export const CONTRACTS = 4;
export const TRANSFERS = 6;
export const CALLS = 2;
export const NEW_SLOTS = 12;
export const T0 = 1_700_000_000;
const BALANCE = 10_000n * 10n ** 18n;

const hexOf = (b: Uint8Array): string => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
const bytesOf = (h: string): Uint8Array => Buffer.from(h.startsWith('0x') ? h.slice(2) : h, 'hex');
export const word = (b: bigint): string => `0x${b.toString(16).padStart(64, '0')}`;

/** keccak256("Wrote(bytes32,bytes32)"): topic 0 of every log of the contract. */
export const EVENT = hexOf(keccak256(new TextEncoder().encode('Wrote(bytes32,bytes32)')));

/**
 * Runtime: for each 64-byte (slot, value) pair of the calldata: SSTORE(slot, value) and
 * LOG2(data = value, topics = [EVENT, slot]).
 */
export const RUNTIME =
  `0x6000` + // PUSH1 0                  i
  `5b` + //     02 JUMPDEST (loop)
  `368110` + // CALLDATASIZE DUP2 LT       i < cds
  `15604557` + // ISZERO PUSH1 0x45 JUMPI  done when i >= cds
  `8060200135` + // DUP1 PUSH1 32 ADD CALLDATALOAD   value = cd[i+32]
  `8135` + //   DUP2 CALLDATALOAD          slot = cd[i]
  `8160005280` + // DUP2 PUSH1 0 MSTORE DUP1  mem[0] = value
  `919055` + // SWAP2 SWAP1 SSTORE          sstore(slot, value)
  `7f${EVENT.slice(2)}` + // PUSH32 EVENT
  `60206000a2` + // PUSH1 32 PUSH1 0 LOG2    log2(0, 32, EVENT, slot)
  `604001600256` + // PUSH1 64 ADD PUSH1 2 JUMP
  `5b00`; //    0x45 JUMPDEST STOP
const RUNTIME_LEN = (RUNTIME.length - 2) / 2;
const INIT = `0x60${RUNTIME_LEN.toString(16)}600c60003960${RUNTIME_LEN.toString(16)}6000f3${RUNTIME.slice(2)}`;
export const CODE_HASH = hexOf(keccak256(bytesOf(RUNTIME)));

export interface ModelTx {
  hash: string;
  block: number;
  index: number;
  from: string;
}

export interface ModelBlock {
  number: number;
  hash: string;
  stateRoot: string;
  txs: string[];
}

export interface ModelLog {
  address: string;
  slot: string;
  value: string;
  txIndex: number;
  logIndex: number;
  txHash: string;
}

export interface FreshAccount {
  address: string;
  block: number;
  value: bigint;
}

/** Every write to one slot: blocks ascending, the value written at each. */
interface SlotHistory {
  blocks: number[];
  values: bigint[];
}

export interface ScaledModel {
  genesis: Record<string, unknown>;
  genesisPath: string;
  blocks: ModelBlock[]; // index = number; blocks[0] is anvil's genesis
  txs: Map<string, ModelTx>;
  txList: string[];
  contracts: string[];
  /** Per contract: slot (0x word) -> history. */
  slots: Map<string, SlotHistory>[];
  /** Per contract: its slot keys in write order. */
  slotKeys: string[][];
  logs: ModelLog[][]; // index = block number
  fresh: FreshAccount[];
  counts: { blocks: number; txs: number; accounts: number; slots: number; logs: number };
}

export function storageAt(m: ScaledModel, contract: number, slot: string, block: number): bigint {
  const h = (m.slots[contract] as Map<string, SlotHistory>).get(slot);
  if (h === undefined) return 0n;
  let v = 0n;
  for (let i = 0; i < h.blocks.length && (h.blocks[i] as number) <= block; i++) v = h.values[i] as bigint;
  return v;
}

const rpcClient = (url: string): Rpc => batchClient(url, 'anvil');

/** The Cancun header fields in RLP order, from a JSON-RPC block. */
const HEADER_FIELDS = [
  ['parentHash', 'b'],
  ['sha3Uncles', 'b'],
  ['miner', 'b'],
  ['stateRoot', 'b'],
  ['transactionsRoot', 'b'],
  ['receiptsRoot', 'b'],
  ['logsBloom', 'b'],
  ['difficulty', 'n'],
  ['number', 'n'],
  ['gasLimit', 'n'],
  ['gasUsed', 'n'],
  ['timestamp', 'n'],
  ['extraData', 'b'],
  ['mixHash', 'b'],
  ['nonce', 'b'],
  ['baseFeePerGas', 'n'],
  ['withdrawalsRoot', 'b'],
  ['blobGasUsed', 'n'],
  ['excessBlobGas', 'n'],
  ['parentBeaconBlockRoot', 'b'],
] as const;

/** Minimal big-endian bytes of a JSON quantity (0 -> empty). */
function qtyBytes(q: unknown): Uint8Array {
  if (typeof q !== 'string' || !/^0x[0-9a-f]+$/i.test(q)) throw new Error(`not a quantity: ${String(q)}`);
  let h = BigInt(q).toString(16);
  if (h === '0') return new Uint8Array(0);
  if (h.length % 2) h = `0${h}`;
  return Buffer.from(h, 'hex');
}

function dataBytes(d: unknown): Uint8Array {
  if (typeof d !== 'string' || !/^0x([0-9a-f]{2})*$/i.test(d)) throw new Error(`not data: ${String(d)}`);
  return bytesOf(d);
}

/** keccak256(RLP(Cancun header)) from the fields of a JSON-RPC block: the bench's own block hash. */
export function headerHash(b: Record<string, unknown>): string {
  const fields = HEADER_FIELDS.map(([k, t]) => {
    if (b[k] === undefined) throw new Error(`header field ${k} missing`);
    return t === 'n' ? qtyBytes(b[k]) : dataBytes(b[k]);
  });
  return hexOf(keccak256(RLP.encode(fields)));
}

/** The fee fields of each transaction type, in encoding order. */
const FEE_FIELDS: Record<number, string[]> = {
  0: ['gasPrice'],
  1: ['gasPrice'],
  2: ['maxPriorityFeePerGas', 'maxFeePerGas'],
};

/** keccak256 of the canonical encoding rebuilt from a JSON-RPC transaction's fields (types 0, 1, 2). */
export function txHashOf(t: Record<string, unknown>): string {
  const type = Number(t['type']);
  const fees = FEE_FIELDS[type];
  if (fees === undefined) throw new Error(`tx type ${type}`);
  const to = t['to'] === null ? new Uint8Array(0) : dataBytes(t['to']);
  const body = [
    qtyBytes(t['nonce']),
    ...fees.map((f) => qtyBytes(t[f])),
    qtyBytes(t['gas']),
    to,
    qtyBytes(t['value']),
    dataBytes(t['input']),
  ];
  const sig = [qtyBytes(t['r']), qtyBytes(t['s'])];
  if (type === 0) return hexOf(keccak256(RLP.encode([...body, qtyBytes(t['v']), ...sig])));
  const al = ((t['accessList'] ?? []) as { address: string; storageKeys: string[] }[]).map((e) => [
    dataBytes(e.address),
    e.storageKeys.map(dataBytes),
  ]);
  const fields = [qtyBytes(t['chainId']), ...body, al, qtyBytes(t['yParity'] ?? t['v']), ...sig];
  return hexOf(keccak256(Buffer.concat([Buffer.from([type]), RLP.encode(fields)])));
}

async function txRoot(raws: Uint8Array[]): Promise<string> {
  const trie = await createMPT();
  for (let i = 0; i < raws.length; i++) await trie.put(RLP.encode(i), raws[i] as Uint8Array);
  return hexOf(trie.root());
}

export function scaledGenesis(senders: string[]): Record<string, unknown> {
  return cancunGenesis({
    accounts: senders,
    balance: `0x${BALANCE.toString(16)}`,
    chainId: CHAIN_ID,
    timestamp: `0x${T0.toString(16)}`,
  });
}

/** The anvil flags that make its genesis state equal the genesis file's alloc. */
export function anvilArgs(genesisPath: string, port: number, cachePath: string): string[] {
  return anvilFlags({
    genesisPath,
    port,
    cachePath,
    accounts: SENDERS,
    balanceEther: BALANCE / 10n ** 18n,
    fifo: true,
    quiet: true,
  });
}

export function senderWallets(): HDNodeWallet[] {
  return Array.from({ length: SENDERS }, (_, i) => HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`));
}

/** One block's signed transactions (with their sender), and what they write into the model. */
interface BlockTxs {
  raws: { raw: string; hash: string; from: number }[];
  logs: ModelLog[];
  writes: [number, string, bigint][];
  fresh: FreshAccount[];
}

/** The senders' keys and nonces, the random stream, and the round-robin counters of a build. */
class ScaledSigner {
  readonly wallets = senderWallets();
  readonly senders = this.wallets.map((w) => w.address.toLowerCase());
  readonly nonces = this.senders.map(() => 0);
  readonly rng = new Rng(0x5ca1ed);
  sender = 0;
  freshN = 0;

  rand32(): bigint {
    let v = 0n;
    for (let i = 0; i < 8; i++) v = (v << 32n) | BigInt(this.rng.u32());
    return v === 0n ? 1n : v;
  }

  sign(s: number, fields: Record<string, unknown>): { raw: string; hash: string } {
    const nonce = this.nonces[s] as number;
    this.nonces[s] = nonce + 1;
    const tx = Transaction.from({ chainId: CHAIN_ID, nonce, ...fields });
    tx.signature = Signature.from((this.wallets[s] as HDNodeWallet).signingKey.sign(tx.unsignedHash));
    const raw = tx.serialized;
    return { raw, hash: hexOf(keccak256(bytesOf(raw))) };
  }
}

const EIP1559_FEE = { type: 2, maxFeePerGas: 3_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };

/** Block 1: the contracts, deployed by the first sender. */
function deployTxs(k: ScaledSigner, m: ScaledModel): BlockTxs {
  const raws: BlockTxs['raws'] = [];
  for (let c = 0; c < CONTRACTS; c++) {
    m.contracts.push(getCreateAddress({ from: k.senders[0] as string, nonce: k.nonces[0] as number }).toLowerCase());
    raws.push({ ...k.sign(0, { ...EIP1559_FEE, data: INIT, gasLimit: 200_000 }), from: 0 });
  }
  return { raws, logs: [], writes: [], fresh: [] };
}

/** Blocks after the first: transfers to fresh accounts, then calls writing new slots and one existing slot. */
function trafficTxs(k: ScaledSigner, m: ScaledModel, n: number): BlockTxs {
  const t: BlockTxs = { raws: [], logs: [], writes: [], fresh: [] };
  for (let i = 0; i < TRANSFERS; i++) {
    const s = k.sender++ % SENDERS;
    const address = hexOf(keccak256(Buffer.from(`scaled-bench-account-${k.freshN}`))).slice(0, 42);
    const value = 1_000_000_000n + BigInt(k.freshN++);
    t.fresh.push({ address, block: n, value });
    const fee = i % 2 === 0 ? EIP1559_FEE : { type: 0, gasPrice: 2_000_000_000n };
    t.raws.push({ ...k.sign(s, { ...fee, to: address, value, gasLimit: 21_000 }), from: s });
  }
  for (let i = 0; i < CALLS; i++) {
    const s = k.sender++ % SENDERS;
    const c = k.rng.int(CONTRACTS);
    const keys = m.slotKeys[c] as string[];
    const pairs: [string, bigint][] = [];
    for (let j = 0; j < NEW_SLOTS; j++) pairs.push([word(k.rand32()), k.rand32()]);
    if (keys.length > 0) pairs.push([keys[k.rng.int(keys.length)] as string, k.rand32()]);
    const data = `0x${pairs.map(([key, v]) => key.slice(2) + word(v).slice(2)).join('')}`;
    const fee = i % 2 === 0 ? EIP1559_FEE : { type: 1, gasPrice: 2_000_000_000n, accessList: [] };
    const signed = k.sign(s, { ...fee, to: m.contracts[c], data, gasLimit: 400_000 });
    t.raws.push({ ...signed, from: s });
    for (const [key, v] of pairs) {
      t.writes.push([c, key, v]);
      t.logs.push({
        address: m.contracts[c] as string,
        slot: key,
        value: word(v),
        txIndex: t.raws.length - 1,
        logIndex: t.logs.length,
        txHash: signed.hash,
      });
    }
  }
  return t;
}

/**
 * Sends the block's transactions in one batch, has anvil mine them, and checks the block: its
 * transactions in the order sent (fifo, as in fixture-chain.ts), its hash, parent and
 * transactions root recomputed here, the contracts deployed or every call's gas spent.
 */
async function mineChecked(rpc: Rpc, m: ScaledModel, n: number, raws: BlockTxs['raws']) {
  const hs = await rpc(raws.map((r) => ['eth_sendRawTransaction', [r.raw]] as [string, unknown[]]));
  hs.forEach((h, i) => {
    if (h !== raws[i]?.hash) throw new Error(`scaled: anvil took ${String(raws[i]?.hash)} as ${String(h)}`);
  });
  await rpc([['evm_mine', [T0 + 12 * n]]]);
  const b = (await rpc([['eth_getBlockByNumber', [`0x${n.toString(16)}`, false]]]))[0] as Record<string, unknown>;
  const want = raws.map((r) => r.hash);
  if ((b['transactions'] as string[]).join() !== want.join())
    throw new Error(`scaled: block ${n} holds other transactions than sent`);
  const hash = headerHash(b);
  if (hash !== b['hash']) throw new Error(`scaled: block ${n}: keccak(header) ${hash} != anvil's ${String(b['hash'])}`);
  if (b['parentHash'] !== (m.blocks[n - 1] as ModelBlock).hash) throw new Error(`scaled: block ${n} parentHash`);
  if ((await txRoot(raws.map((r) => bytesOf(r.raw)))) !== b['transactionsRoot'])
    throw new Error(`scaled: block ${n}: transactionsRoot is not the trie of the signed txs`);
  if (n === 1) {
    const receipts = (await rpc(raws.map((r) => ['eth_getTransactionReceipt', [r.hash]] as [string, unknown[]]))) as {
      status: string;
    }[];
    const codes = (await rpc(
      m.contracts.map((a) => ['eth_getCode', [a, 'latest']] as [string, unknown[]]),
    )) as string[];
    if (receipts.some((r) => r.status !== '0x1') || codes.some((c) => c !== RUNTIME))
      throw new Error('scaled: contract deployment failed');
  } else {
    const gasUsed = Number(b['gasUsed']);
    if (gasUsed < TRANSFERS * 21_000 + CALLS * NEW_SLOTS * 22_100)
      throw new Error(`scaled: block ${n} used only ${gasUsed} gas (a call failed?)`);
  }
  m.blocks.push({ number: n, hash, stateRoot: b['stateRoot'] as string, txs: want });
}

/** The mined block's transactions, slot writes, logs and fresh accounts into the model. */
function recordScaledBlock(m: ScaledModel, senders: string[], n: number, t: BlockTxs): void {
  t.raws.forEach((r, index) => {
    m.txs.set(r.hash, { hash: r.hash, block: n, index, from: senders[r.from] as string });
    m.txList.push(r.hash);
  });
  for (const [c, k, v] of t.writes) {
    const slots = m.slots[c] as Map<string, SlotHistory>;
    let h = slots.get(k);
    if (h === undefined) {
      h = { blocks: [], values: [] };
      slots.set(k, h);
      (m.slotKeys[c] as string[]).push(k);
    }
    h.blocks.push(n);
    h.values.push(v);
  }
  m.logs.push(t.logs);
  m.fresh.push(...t.fresh);
}

/**
 * Builds the chain into a running anvil (started with anvilArgs) up to block `blocks`, checking
 * every block as it goes, and returns the model. `log` gets progress lines.
 */
export async function buildScaledChain(
  url: string,
  dir: string,
  blocks: number,
  log: (line: string) => void,
  onBlock?: (n: number) => void,
): Promise<ScaledModel> {
  const rpc = rpcClient(url);
  const k = new ScaledSigner();
  const genesis = scaledGenesis(k.senders);
  const genesisPath = join(dir, 'genesis.json');
  writeFileSync(genesisPath, JSON.stringify(genesis, null, 1));
  const m: ScaledModel = {
    genesis,
    genesisPath,
    blocks: [],
    txs: new Map(),
    txList: [],
    contracts: [],
    slots: Array.from({ length: CONTRACTS }, () => new Map()),
    slotKeys: Array.from({ length: CONTRACTS }, () => []),
    logs: [[]],
    fresh: [],
    counts: { blocks: 0, txs: 0, accounts: 0, slots: 0, logs: 0 },
  };
  const g = (await rpc([['eth_getBlockByNumber', ['0x0', false]]]))[0] as Record<string, unknown>;
  if (headerHash(g) !== g['hash']) throw new Error('scaled: anvil block 0 hash is not keccak(header)');
  m.blocks.push({ number: 0, hash: g['hash'] as string, stateRoot: g['stateRoot'] as string, txs: [] });
  const t0 = Date.now();
  let lastLog = t0;
  for (let n = 1; n <= blocks; n++) {
    const t = n === 1 ? deployTxs(k, m) : trafficTxs(k, m, n);
    await mineChecked(rpc, m, n, t.raws);
    recordScaledBlock(m, k.senders, n, t);
    onBlock?.(n);
    if (Date.now() - lastLog >= 10_000 || n === blocks) {
      lastLog = Date.now();
      const s = (Date.now() - t0) / 1000;
      log(
        `scaled: anvil built block ${n}/${blocks} (${m.txList.length} txs) in ${s.toFixed(0)} s, ${(n / s).toFixed(0)} blocks/s`,
      );
    }
  }
  m.counts = {
    blocks,
    txs: m.txList.length,
    accounts: m.fresh.length + SENDERS + CONTRACTS,
    slots: m.slotKeys.reduce((s, k) => s + k.length, 0),
    logs: m.logs.reduce((s, l) => s + l.length, 0),
  };
  return m;
}
