// Builds the fixture chain: every block is executed with @ethereumjs/vm (runBlock with
// generate: true) and then finalized with the resulting state root, receipts root, bloom and
// gas used. Uncles are real siblings of canonical blocks (difficulty valid for their parent)
// and their rewards are paid by the VM. The seal (mixHash/nonce) is not a valid ethash proof,
// like geth's chain maker with a fake ethash engine.
import { RLP } from '@ethereumjs/rlp';
import { Block, type BlockHeader, createBlockHeader, genTransactionsTrieRoot } from '@ethereumjs/block';
import { createCommonFromGethGenesis, type GethGenesis, Hardfork } from '@ethereumjs/common';
import {
  type AccessList,
  createAccessList2930Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  createLegacyTxFromBytesArray,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { type Address, bytesToHex, createAccount, createContractAddress, KECCAK256_RLP_ARRAY } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import { preMergeGenesis } from '@chainnode/testkit';
import { labelAddress, makeSenders, type Sender } from './accounts.js';
import { compileContracts, creationCode, encodeCall } from './contracts.js';
import { Prng } from './prng.js';

export const CHAIN_ID = 1337;
export const LONDON_BLOCK = 600;
export const BLOCK_COUNT = 1600;
/** The fork leaves the main chain after this block (10 blocks before its head)... */
export const FORK_AT = 1590;
/** ...with this many blocks of its own (so it is longer than the main chain). */
export const FORK_BLOCKS = 15;
export const GENESIS_TIMESTAMP = 1_700_000_000;
export const GENESIS_GAS_LIMIT = 15_000_000n;
export const GENESIS_DIFFICULTY = 0x400000n;
export const SENDER_BALANCE = 1_000n * 10n ** 18n;
const GWEI = 1_000_000_000n;
const INITIAL_BASE_FEE = 1_000_000_000n; // EIP-1559 INITIAL_BASE_FEE
const EXTRA_DATA = new TextEncoder().encode('chainnode fixture');
const GENESIS_EXTRA_DATA = new TextEncoder().encode('chainnode fixture genesis');
const TOKEN_MINT = 1_000_000n * 10n ** 18n;
export const BEACONS_IN_BLOCK_1 = 5;
const EMPTY_RUN = [1000, 1001, 1002, 1003];

export type TxKind = 'legacy-unprotected' | 'legacy-eip155' | 'eip2930' | 'eip1559';

export interface ChainStats {
  blocks: number;
  txs: number;
  txsByKind: Record<TxKind, number>;
  contractCreations: number;
  plainTransfers: number;
  reverted: number;
  uncles: number;
  blocksByUncleCount: [number, number, number];
  uncleDepths: Record<number, number>;
  emptyBlocks: number;
  logs: number;
  logsByAddress: Map<string, number>;
  logsByTopicCount: [number, number, number, number, number];
  logsWithEmptyData: number;
  logsWithDataAtLeast200: number;
  maxLogDataLength: number;
  senders: Set<string>;
  totalDifficulty: bigint;
  finalStateRoot: string;
  headHash: string;
  minBaseFee: bigint;
  maxBaseFee: bigint;
}

export interface FixtureOutput {
  genesisJson: string;
  /** fixtures/fork/chain.rlp: blocks 1..forkAt of the main chain, then `blocks` blocks of its own. */
  fork: { chainRlp: Uint8Array; forkAt: number; blocks: number; txs: number; logs: number; headHash: string };
  chainRlp: Uint8Array;
  genesisHash: string;
  genesisStateRoot: string;
  stats: ChainStats;
  addresses: {
    token: string;
    emitter: string;
    registry: string;
    beacons: string[];
    miners: string[];
    uncleMiners: string[];
  };
  senders: Sender[];
  solcVersion: string;
  /** A token holder and its balance after the last block, for the README's worked example. */
  tokenExample: { holder: string; balance: bigint };
  registryExample: { caller: string; key: bigint; value: bigint };
}

type Progress = (msg: string) => void;

interface PlannedTx {
  tx: TypedTransaction;
  kind: TxKind;
  expectSuccess: boolean;
  creation: boolean;
  plainTransfer: boolean;
  from: string;
}

export function genesisConfig(alloc: GethGenesis['alloc']): GethGenesis {
  return preMergeGenesis({
    chainId: CHAIN_ID,
    londonBlock: LONDON_BLOCK,
    timestamp: GENESIS_TIMESTAMP,
    extraData: bytesToHex(GENESIS_EXTRA_DATA),
    gasLimit: GENESIS_GAS_LIMIT,
    difficulty: GENESIS_DIFFICULTY,
    alloc,
  }) as GethGenesis;
}

export async function buildFixtureChain(progress: Progress = () => {}): Promise<FixtureOutput> {
  const rng = new Prng('chainnode fixture chain v1');
  const senders = makeSenders();
  const contracts = compileContracts();
  progress(`compiled contracts with solc ${contracts.solcVersion}`);

  const alloc: GethGenesis['alloc'] = {};
  for (const s of senders) alloc[s.hex] = { balance: `0x${SENDER_BALANCE.toString(16)}` };
  const genesis = genesisConfig(alloc);

  const common = createCommonFromGethGenesis(genesis, { chain: 'chainnode-fixture' });
  const txCommonBerlin = common.copy();
  txCommonBerlin.setHardfork(Hardfork.Berlin);
  const txCommonLondon = common.copy();
  txCommonLondon.setHardfork(Hardfork.London);
  // Signing under a pre-EIP-155 rule set yields v = 27/28 (no replay protection).
  const txCommonUnprotected = common.copy();
  txCommonUnprotected.setHardfork(Hardfork.TangerineWhistle);

  const vm = await createVM({ common: common.copy(), setHardfork: true });
  for (const s of senders) {
    await vm.stateManager.putAccount(s.address, createAccount({ balance: SENDER_BALANCE }));
  }
  const genesisStateRoot = await vm.stateManager.getStateRoot();
  const genesisHeader = createBlockHeader(
    {
      number: 0n,
      gasLimit: GENESIS_GAS_LIMIT,
      difficulty: GENESIS_DIFFICULTY,
      timestamp: BigInt(GENESIS_TIMESTAMP),
      extraData: GENESIS_EXTRA_DATA,
      nonce: hexToBytes(genesis.nonce),
      stateRoot: genesisStateRoot,
    },
    { common, setHardfork: true },
  );

  const miners = [0, 1, 2].map((i) => labelAddress(`chainnode-fixture-miner-${i}`));
  const uncleMiners = [0, 1, 2, 3].map((i) => labelAddress(`chainnode-fixture-uncle-miner-${i}`));
  const recipients = Array.from({ length: 200 }, (_, i) => labelAddress(`chainnode-fixture-recipient-${i}`));

  // Local model of the world, used to plan transactions that succeed or revert on purpose;
  // every receipt's status is checked against the plan after execution.
  const nonces = new Map<string, bigint>();
  const tokenBalance = new Map<string, bigint>();
  const allowances = new Map<string, bigint>(); // `${owner}:${spender}` -> amount
  const registryEntries: { caller: string; key: bigint; value: bigint }[] = [];
  const deployer = senders[0]!;
  const tokenAddr = createContractAddress(deployer.address, 0n);
  const emitterAddr = createContractAddress(deployer.address, 1n);
  const registryAddr = createContractAddress(deployer.address, 2n);
  const beacons: Address[] = [];

  const stats: ChainStats = {
    blocks: 0,
    txs: 0,
    txsByKind: { 'legacy-unprotected': 0, 'legacy-eip155': 0, eip2930: 0, eip1559: 0 },
    contractCreations: 0,
    plainTransfers: 0,
    reverted: 0,
    uncles: 0,
    blocksByUncleCount: [0, 0, 0],
    uncleDepths: {},
    emptyBlocks: 0,
    logs: 0,
    logsByAddress: new Map(),
    logsByTopicCount: [0, 0, 0, 0, 0],
    logsWithEmptyData: 0,
    logsWithDataAtLeast200: 0,
    maxLogDataLength: 0,
    senders: new Set(),
    totalDifficulty: GENESIS_DIFFICULTY,
    finalStateRoot: '',
    headHash: '',
    minBaseFee: -1n,
    maxBaseFee: 0n,
  };

  const canonical: BlockHeader[] = [genesisHeader];
  const encodedBlocks: Uint8Array[] = [];
  let congestionLeft = 0;
  const started = Date.now();

  for (let number = 1; number <= BLOCK_COUNT; number++) {
    const parent = canonical[number - 1]!;
    const london = number >= LONDON_BLOCK;
    const timestamp = parent.timestamp + BigInt(rng.int(3, 25));

    let gasLimit: bigint;
    if (number === LONDON_BLOCK) {
      gasLimit = parent.gasLimit * 2n; // EIP-1559: the fork block's limit is measured against 2x the parent's
    } else {
      const bound = parent.gasLimit / 1024n - 1n;
      const step = bound / 4n;
      gasLimit = parent.gasLimit + BigInt(rng.int(-Number(step), Number(step)));
    }
    let baseFeePerGas: bigint | undefined;
    if (number === LONDON_BLOCK) baseFeePerGas = INITIAL_BASE_FEE;
    else if (london) baseFeePerGas = parent.calcNextBaseFee();

    // Uncles: siblings of canonical blocks 1..6 generations back.
    const uncles: BlockHeader[] = [];
    if (number >= 2) {
      const r = rng.next();
      const want = r < 0.08 ? 1 : r < 0.13 ? 2 : 0;
      for (let i = 0; i < want; i++) {
        const depth = rng.int(1, Math.min(6, number - 1));
        const u = number - depth;
        const sibling = canonical[u]!;
        const uncleParent = canonical[u - 1]!;
        const uncle = createBlockHeader(
          {
            parentHash: uncleParent.hash(),
            coinbase: rng.pick(uncleMiners),
            stateRoot: uncleParent.stateRoot,
            number: BigInt(u),
            gasLimit: sibling.gasLimit,
            gasUsed: 0n,
            timestamp: sibling.timestamp + BigInt(rng.int(1, 4)),
            extraData: new TextEncoder().encode(`uncle ${number}/${i}`),
            mixHash: rng.bytes(32),
            nonce: rng.bytes(8),
            ...(sibling.baseFeePerGas !== undefined ? { baseFeePerGas: sibling.baseFeePerGas } : {}),
          },
          { common, setHardfork: true, calcDifficultyFromHeader: uncleParent },
        );
        uncles.push(uncle);
        stats.uncleDepths[depth] = (stats.uncleDepths[depth] ?? 0) + 1;
      }
    }

    // Transactions.
    const txCommon = london ? txCommonLondon : txCommonBerlin;
    const fee = baseFeePerGas ?? 0n;
    const planned: PlannedTx[] = [];
    let plannedGas = 0n;

    const nextNonce = (s: Sender): bigint => {
      const n = nonces.get(s.hex) ?? 0n;
      nonces.set(s.hex, n + 1n);
      return n;
    };
    const pickKind = (): TxKind => {
      const r = rng.next();
      if (!london) return r < 0.12 ? 'legacy-unprotected' : r < 0.62 ? 'legacy-eip155' : 'eip2930';
      return r < 0.06 ? 'legacy-unprotected' : r < 0.26 ? 'legacy-eip155' : r < 0.4 ? 'eip2930' : 'eip1559';
    };
    const add = (
      from: Sender,
      to: Address | undefined,
      data: Uint8Array,
      gasLimit: bigint,
      opts: { value?: bigint; expectSuccess?: boolean; kind?: TxKind; accessList?: AccessList | undefined } = {},
    ): void => {
      const kind = opts.kind ?? pickKind();
      const nonce = nextNonce(from);
      const value = opts.value ?? 0n;
      const tip = BigInt(rng.int(1, 20)) * (GWEI / 10n);
      const gasPrice = london ? fee + tip : BigInt(rng.int(1, 30)) * (GWEI / 10n);
      const base = { nonce, gasLimit, value, data, ...(to !== undefined ? { to } : {}) };
      let tx: TypedTransaction;
      if (kind === 'legacy-unprotected') {
        const signed = createLegacyTx({ ...base, gasPrice }, { common: txCommonUnprotected }).sign(from.privateKey);
        tx = createLegacyTxFromBytesArray(signed.raw(), { common: txCommon });
      } else if (kind === 'legacy-eip155') {
        tx = createLegacyTx({ ...base, gasPrice }, { common: txCommon }).sign(from.privateKey);
      } else if (kind === 'eip2930') {
        tx = createAccessList2930Tx(
          { ...base, gasPrice, chainId: BigInt(CHAIN_ID), accessList: opts.accessList ?? [] },
          { common: txCommon },
        ).sign(from.privateKey);
      } else {
        tx = createFeeMarket1559Tx(
          {
            ...base,
            chainId: BigInt(CHAIN_ID),
            maxPriorityFeePerGas: tip,
            maxFeePerGas: fee * 2n + tip,
            accessList: opts.accessList ?? [],
          },
          { common: txCommon },
        ).sign(from.privateKey);
      }
      planned.push({
        tx,
        kind,
        expectSuccess: opts.expectSuccess ?? true,
        creation: to === undefined,
        plainTransfer: to !== undefined && data.length === 0,
        from: from.hex,
      });
      plannedGas += gasLimit;
    };
    const accessListFor = (addr: Address): AccessList | undefined =>
      rng.chance(0.5) ? [{ address: addr.toString(), storageKeys: [bytesToHex(new Uint8Array(32))] }] : undefined;
    const otherSender = (s: Sender): Sender => {
      const o = rng.pick(senders);
      return o.index === s.index ? senders[(s.index + 1) % senders.length]! : o;
    };
    const deployBeacon = (from: Sender, kind?: TxKind): void => {
      const id = BigInt(beacons.length + 1);
      beacons.push(createContractAddress(from.address, nonces.get(from.hex) ?? 0n));
      add(from, undefined, creationCode(contracts.beacon, [id]), 400_000n, kind ? { kind } : {});
    };

    if (number === 1) {
      add(deployer, undefined, contracts.token.bytecode, 1_500_000n, { kind: 'legacy-eip155' });
      add(deployer, undefined, contracts.emitter.bytecode, 1_500_000n, { kind: 'legacy-unprotected' });
      add(deployer, undefined, contracts.registry.bytecode, 1_500_000n, { kind: 'eip2930' });
      for (let i = 0; i < BEACONS_IN_BLOCK_1; i++) deployBeacon(deployer);
    } else if (number === 2 || number === 3) {
      const half = senders.length / 2;
      for (const s of senders.slice(number === 2 ? 0 : half, number === 2 ? half : senders.length)) {
        add(s, tokenAddr, encodeCall(contracts.token, 'mint', [s.hex, TOKEN_MINT]), 120_000n);
        tokenBalance.set(s.hex, (tokenBalance.get(s.hex) ?? 0n) + TOKEN_MINT);
      }
    } else if (EMPTY_RUN.includes(number) || rng.chance(0.05)) {
      // empty block
    } else {
      if (number % 40 === 0 || (london && number % 40 === 20)) deployBeacon(rng.pick(senders));
      const count = rng.int(1, 12);
      for (let t = 0; t < count; t++) {
        const from = rng.pick(senders);
        const r = rng.next();
        if (r < 0.13) {
          const n = rng.int(4, 30);
          const data = rng.bytes(rng.int(0, 240));
          add(
            from,
            emitterAddr,
            encodeCall(contracts.emitter, 'burst', [n, rng.bigint(64), data]),
            80_000n + BigInt(n) * 9_000n,
            {
              accessList: accessListFor(emitterAddr),
            },
          );
        } else if (r < 0.16) {
          const data = rng.bytes(rng.int(200, 240));
          add(from, emitterAddr, encodeCall(contracts.emitter, 'emitAll', [rng.bigint(64), data]), 200_000n);
        } else if (r < 0.18) {
          const n = rng.int(1, 10);
          add(
            from,
            emitterAddr,
            encodeCall(contracts.emitter, 'burstThenRevert', [n, rng.bigint(64), rng.bytes(32)]),
            80_000n + BigInt(n) * 9_000n,
            {
              expectSuccess: false,
            },
          );
        } else if (r < 0.4) {
          const to = rng.chance(0.7) ? otherSender(from).address : rng.pick(recipients);
          const have = tokenBalance.get(from.hex) ?? 0n;
          const amount = have === 0n ? 0n : rng.bigint(64) % (have / 100n + 1n);
          add(from, tokenAddr, encodeCall(contracts.token, 'transfer', [to.toString(), amount]), 90_000n, {
            accessList: accessListFor(tokenAddr),
          });
          tokenBalance.set(from.hex, have - amount);
          tokenBalance.set(to.toString(), (tokenBalance.get(to.toString()) ?? 0n) + amount);
        } else if (r < 0.5) {
          const k = rng.int(2, 20);
          const tos = Array.from({ length: k }, () =>
            (rng.chance(0.5) ? rng.pick(senders).address : rng.pick(recipients)).toString(),
          );
          const have = tokenBalance.get(from.hex) ?? 0n;
          const amount = rng.bigint(48);
          if (amount * BigInt(k) > have) continue;
          add(
            from,
            tokenAddr,
            encodeCall(contracts.token, 'batchTransfer', [tos, amount]),
            70_000n + BigInt(k) * 32_000n,
          );
          tokenBalance.set(from.hex, have - amount * BigInt(k));
          for (const to of tos) tokenBalance.set(to, (tokenBalance.get(to) ?? 0n) + amount);
        } else if (r < 0.53) {
          const have = tokenBalance.get(from.hex) ?? 0n;
          add(
            from,
            tokenAddr,
            encodeCall(contracts.token, 'transfer', [otherSender(from).hex, have + 1n + rng.bigint(32)]),
            90_000n,
            {
              expectSuccess: false,
            },
          );
        } else if (r < 0.58) {
          const spender = otherSender(from);
          const amount = rng.bigint(80);
          add(from, tokenAddr, encodeCall(contracts.token, 'approve', [spender.hex, amount]), 70_000n);
          allowances.set(`${from.hex}:${spender.hex}`, amount);
        } else if (r < 0.61) {
          // transferFrom by a spender that holds an allowance (if any), otherwise a plain approve
          const owners = [...allowances.entries()].filter(([key, a]) => a > 0n && key.endsWith(`:${from.hex}`));
          const entry = owners.length > 0 ? rng.pick(owners) : undefined;
          if (entry === undefined) continue;
          const owner = entry[0].split(':')[0]!;
          const have = tokenBalance.get(owner) ?? 0n;
          const amount = [entry[1], have, rng.bigint(40)].reduce((a, b) => (a < b ? a : b));
          const to = rng.pick(recipients).toString();
          add(from, tokenAddr, encodeCall(contracts.token, 'transferFrom', [owner, to, amount]), 100_000n);
          allowances.set(entry[0], entry[1] - amount);
          tokenBalance.set(owner, have - amount);
          tokenBalance.set(to, (tokenBalance.get(to) ?? 0n) + amount);
        } else if (r < 0.71) {
          const key = BigInt(rng.int(0, 50));
          const value = rng.bigint(128);
          add(from, registryAddr, encodeCall(contracts.registry, 'store', [key, value]), 140_000n, {
            accessList: accessListFor(registryAddr),
          });
          registryEntries.push({ caller: from.hex, key, value });
        } else if (r < 0.73) {
          add(from, registryAddr, encodeCall(contracts.registry, 'fail', [rng.int(0, 1000)]), 60_000n, {
            expectSuccess: false,
          });
        } else if (r < 0.9) {
          const to = rng.chance(0.6) ? otherSender(from).address : rng.pick(recipients);
          const value = rng.chance(0.1) ? 0n : rng.bigint(60);
          add(from, to, new Uint8Array(0), 21_000n, { value });
        } else if (r < 0.94 && beacons.length > 0) {
          const b = rng.pick(beacons);
          add(from, b, encodeCall(contracts.beacon, 'beep', [rng.bigint(32)]), 80_000n);
        } else {
          // more burst traffic on the hot contract
          const n = rng.int(4, 20);
          const data = rng.bytes(rng.int(0, 120));
          add(
            from,
            emitterAddr,
            encodeCall(contracts.emitter, 'burst', [n, rng.bigint(64), data]),
            80_000n + BigInt(n) * 9_000n,
          );
        }
      }
      // Congestion after London: a few runs of blocks whose gas used is far above the target,
      // so the base fee climbs as well as falls.
      if (london) {
        if (congestionLeft === 0 && rng.chance(1 / 60)) congestionLeft = rng.int(4, 8);
        if (congestionLeft > 0) {
          congestionLeft--;
          const room = (gasLimit * 8n) / 10n - plannedGas;
          if (room > 100_000n) {
            add(rng.pick(senders), registryAddr, encodeCall(contracts.registry, 'burn', []), room, {
              expectSuccess: false,
            });
          }
        }
      }
    }

    // Assemble, execute, finalize. Both the draft and the final block hold the same signed
    // transaction objects, so each sender is recovered only once (in runBlock).
    const txs = planned.map((p) => p.tx);
    const uncleHash = uncles.length === 0 ? KECCAK256_RLP_ARRAY : keccak256(RLP.encode(uncles.map((u) => u.raw())));
    const headerData = {
      parentHash: parent.hash(),
      uncleHash,
      coinbase: rng.pick(miners),
      number: BigInt(number),
      gasLimit,
      timestamp,
      extraData: EXTRA_DATA,
      mixHash: rng.bytes(32),
      nonce: rng.bytes(8),
      ...(baseFeePerGas !== undefined ? { baseFeePerGas } : {}),
    };
    const draftHeader = createBlockHeader(headerData, { common, setHardfork: true, calcDifficultyFromHeader: parent });
    // The Block constructor (rather than createBlock) keeps the signed tx objects as they are.
    const draft = new Block(draftHeader, txs, uncles, undefined, { common });
    const result = await runBlock(vm, { block: draft, generate: true, skipBlockValidation: true });

    const finalHeader = createBlockHeader(
      {
        ...headerData,
        difficulty: draftHeader.difficulty,
        stateRoot: result.stateRoot,
        transactionsTrie: await genTransactionsTrieRoot(txs),
        receiptTrie: result.receiptsRoot,
        logsBloom: result.logsBloom,
        gasUsed: result.gasUsed,
      },
      { common, setHardfork: true },
    );
    const block = new Block(finalHeader, txs, uncles, undefined, { common });
    checkBlock(block, parent, number);

    // Check the plan and collect statistics.
    for (const [i, p] of planned.entries()) {
      const receipt = result.receipts[i];
      if (receipt === undefined) throw new Error(`block ${number}: missing receipt ${i}`);
      const ok = 'status' in receipt ? receipt.status === 1 : true;
      if (ok !== p.expectSuccess) {
        throw new Error(
          `block ${number} tx ${i}: status ${ok ? 1 : 0}, planned ${p.expectSuccess ? 'success' : 'revert'}`,
        );
      }
      stats.txs++;
      stats.txsByKind[p.kind]++;
      if (p.creation) stats.contractCreations++;
      if (p.plainTransfer) stats.plainTransfers++;
      if (!ok) stats.reverted++;
      stats.senders.add(p.from);
      for (const [address, topics, data] of receipt.logs) {
        const a = bytesToHex(address);
        stats.logs++;
        stats.logsByAddress.set(a, (stats.logsByAddress.get(a) ?? 0) + 1);
        stats.logsByTopicCount[topics.length as 0 | 1 | 2 | 3 | 4]++;
        if (data.length === 0) stats.logsWithEmptyData++;
        if (data.length >= 200) stats.logsWithDataAtLeast200++;
        if (data.length > stats.maxLogDataLength) stats.maxLogDataLength = data.length;
      }
    }
    if (planned.length === 0) stats.emptyBlocks++;
    stats.uncles += uncles.length;
    stats.blocksByUncleCount[uncles.length as 0 | 1 | 2]++;
    stats.totalDifficulty += block.header.difficulty;
    if (baseFeePerGas !== undefined) {
      if (stats.minBaseFee < 0n || baseFeePerGas < stats.minBaseFee) stats.minBaseFee = baseFeePerGas;
      if (baseFeePerGas > stats.maxBaseFee) stats.maxBaseFee = baseFeePerGas;
    }
    stats.blocks++;

    canonical.push(block.header);
    encodedBlocks.push(block.serialize());
    if (number % 100 === 0 || number === BLOCK_COUNT) {
      progress(
        `block ${number}/${BLOCK_COUNT}: ${stats.txs} txs, ${stats.logs} logs, ${stats.uncles} uncles (${((Date.now() - started) / 1000).toFixed(1)}s)`,
      );
    }
  }

  const head = canonical[canonical.length - 1]!;
  stats.finalStateRoot = bytesToHex(head.stateRoot);
  stats.headHash = bytesToHex(head.hash());

  // Worked examples for the README, read back from the final state.
  const holder = senders[7]!;
  const holderSlot = mappingSlot(holder.address.bytes, 0n);
  const stored = await vm.stateManager.getStorage(tokenAddr, holderSlot);
  const balance = bytesToBigInt(stored);
  if (balance !== (tokenBalance.get(holder.hex) ?? 0n)) {
    throw new Error(`token balance of ${holder.hex}: state has ${balance}, model has ${tokenBalance.get(holder.hex)}`);
  }
  const lastEntry = registryEntries[registryEntries.length - 1];
  if (lastEntry === undefined) throw new Error('no registry entries were stored');

  // The fork (fixtures/fork/): the same chain up to FORK_AT, then FORK_BLOCKS other blocks with
  // other transactions and logs, built on the state of block FORK_AT (the in-memory trie keeps
  // every state the main chain passed through).
  const forkRng = new Prng('chainnode fixture fork v1');
  await vm.stateManager.setStateRoot(canonical[FORK_AT]!.stateRoot);
  const forkBlocks: Uint8Array[] = encodedBlocks.slice(0, FORK_AT);
  const forkStats = { blocks: 0, txs: 0, logs: 0, headHash: '' };
  let forkParent = canonical[FORK_AT]!;
  for (let number = FORK_AT + 1; number <= FORK_AT + FORK_BLOCKS; number++) {
    const baseFeePerGas = forkParent.calcNextBaseFee();
    const txs: TypedTransaction[] = [];
    const pending = new Map<string, bigint>();
    const nonceOf = async (s: Sender): Promise<bigint> => {
      const n = pending.get(s.hex) ?? (await vm.stateManager.getAccount(s.address))?.nonce ?? 0n;
      pending.set(s.hex, n + 1n);
      return n;
    };
    const count = forkRng.int(1, 6);
    for (let t = 0; t < count; t++) {
      const from = forkRng.pick(senders);
      const tip = BigInt(forkRng.int(1, 20)) * (GWEI / 10n);
      const emit = forkRng.chance(0.5);
      const data = emit
        ? encodeCall(contracts.emitter, 'emitAll', [forkRng.bigint(64), forkRng.bytes(forkRng.int(0, 80))])
        : new Uint8Array(0);
      txs.push(
        createFeeMarket1559Tx(
          {
            nonce: await nonceOf(from),
            gasLimit: emit ? 200_000n : 21_000n,
            to: emit ? emitterAddr : forkRng.pick(recipients),
            value: emit ? 0n : BigInt(forkRng.int(1, 1_000_000)),
            data,
            chainId: BigInt(CHAIN_ID),
            maxPriorityFeePerGas: tip,
            maxFeePerGas: baseFeePerGas * 2n + tip,
          },
          { common: txCommonLondon },
        ).sign(from.privateKey),
      );
    }
    const headerData = {
      parentHash: forkParent.hash(),
      uncleHash: KECCAK256_RLP_ARRAY,
      coinbase: forkRng.pick(miners),
      number: BigInt(number),
      gasLimit: forkParent.gasLimit,
      timestamp: forkParent.timestamp + BigInt(forkRng.int(3, 25)),
      extraData: new TextEncoder().encode('chainnode fixture fork'),
      mixHash: forkRng.bytes(32),
      nonce: forkRng.bytes(8),
      baseFeePerGas,
    };
    const draftHeader = createBlockHeader(headerData, {
      common,
      setHardfork: true,
      calcDifficultyFromHeader: forkParent,
    });
    const draft = new Block(draftHeader, txs, [], undefined, { common });
    const result = await runBlock(vm, { block: draft, generate: true, skipBlockValidation: true });
    const finalHeader = createBlockHeader(
      {
        ...headerData,
        difficulty: draftHeader.difficulty,
        stateRoot: result.stateRoot,
        transactionsTrie: await genTransactionsTrieRoot(txs),
        receiptTrie: result.receiptsRoot,
        logsBloom: result.logsBloom,
        gasUsed: result.gasUsed,
      },
      { common, setHardfork: true },
    );
    const block = new Block(finalHeader, txs, [], undefined, { common });
    checkBlock(block, forkParent, number);
    for (const r of result.receipts) {
      if ('status' in r && r.status !== 1) throw new Error(`fork block ${number}: a tx failed`);
      forkStats.logs += r.logs.length;
    }
    forkStats.blocks++;
    forkStats.txs += txs.length;
    forkBlocks.push(block.serialize());
    forkParent = block.header;
  }
  forkStats.headHash = bytesToHex(forkParent.hash());
  progress(
    `fork: blocks ${FORK_AT + 1}..${FORK_AT + FORK_BLOCKS} on block ${FORK_AT}: ${forkStats.txs} txs, ${forkStats.logs} logs, head ${forkStats.headHash}`,
  );

  return {
    fork: { chainRlp: concat(forkBlocks), forkAt: FORK_AT, ...forkStats },
    genesisJson: `${JSON.stringify(genesis, null, 2)}\n`,
    chainRlp: concat(encodedBlocks),
    genesisHash: bytesToHex(genesisHeader.hash()),
    genesisStateRoot: bytesToHex(genesisStateRoot),
    stats,
    addresses: {
      token: tokenAddr.toString(),
      emitter: emitterAddr.toString(),
      registry: registryAddr.toString(),
      beacons: beacons.map((b) => b.toString()),
      miners: miners.map((m) => m.toString()),
      uncleMiners: uncleMiners.map((m) => m.toString()),
    },
    senders,
    solcVersion: contracts.solcVersion,
    tokenExample: { holder: holder.hex, balance },
    registryExample: lastEntry,
  };
}

/** Consensus checks that standard PoW validation would make (seal excepted). */
function checkBlock(block: Block, parent: BlockHeader, number: number): void {
  const h = block.header;
  if (h.difficulty !== h.ethashCanonicalDifficulty(parent)) throw new Error(`block ${number}: bad difficulty`);
  h.validateGasLimit(parent);
  if (h.timestamp <= parent.timestamp) throw new Error(`block ${number}: timestamp not increasing`);
  if (h.common.isActivatedEIP(1559) && number !== LONDON_BLOCK && h.baseFeePerGas !== parent.calcNextBaseFee()) {
    throw new Error(`block ${number}: bad base fee`);
  }
  for (const u of block.uncleHeaders) {
    if (u.number >= h.number || u.number < h.number - 6n) throw new Error(`block ${number}: uncle depth out of range`);
  }
}

/** keccak(pad32(key) ++ pad32(slot)): the storage slot of mapping[key] for a mapping at `slot`. */
export function mappingSlot(key: Uint8Array, slot: bigint): Uint8Array {
  const buf = new Uint8Array(64);
  buf.set(key, 32 - key.length);
  const s = BigInt.asUintN(256, slot).toString(16).padStart(64, '0');
  buf.set(Buffer.from(s, 'hex'), 32);
  return keccak256(buf);
}

function bytesToBigInt(b: Uint8Array): bigint {
  return b.length === 0 ? 0n : BigInt(bytesToHex(b));
}

function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
}

function concat(parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
