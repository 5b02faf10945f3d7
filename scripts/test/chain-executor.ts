// Re-executes a geth chain export with @ethereumjs/vm from its genesis.json, the way the
// importer will: runBlock (without `generate`) throws unless each block's state root, receipts
// root, bloom and gas used match what the VM computes, and validates the transactions root,
// uncles hash and signatures. Reports the logs the VM produced. Run as a child process by
// chain-execute.test.ts (`node chain-executor.js <fixtures dir> [<address>:<slot> ...]` prints
// the JSON report, with the head's storage at each requested slot).
import { fileURLToPath } from 'node:url';

import { createBlockFromRLP, createBlockHeader } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { Address, bytesToHex, createAccount, equalsBytes, hexToBytes } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';

import { readChain, readGenesis, splitRlpItems } from './fixture-files.js';

export interface ExecuteReport {
  blocks: number;
  headStateRoot: string;
  logs: number;
  logsByAddress: Record<string, number>;
  logsByTopicCount: number[];
  logsWithEmptyData: number;
  logsWithDataAtLeast200: number;
  reverted: number;
  revertedWithLogs: number;
  /** Storage at the head for each requested `address:slot` (32-byte hex values). */
  storage: Record<string, string>;
}

/** A report of no blocks yet. */
export function emptyReport(): ExecuteReport {
  return {
    blocks: 0,
    headStateRoot: '',
    logs: 0,
    logsByAddress: {},
    logsByTopicCount: [0, 0, 0, 0, 0],
    logsWithEmptyData: 0,
    logsWithDataAtLeast200: 0,
    reverted: 0,
    revertedWithLogs: 0,
    storage: {},
  };
}

/** Adds one receipt (reverted or not, its logs as [address, topics, data]) to `report`. */
export function countReceipt(
  report: ExecuteReport,
  reverted: boolean,
  logs: readonly (readonly [Uint8Array, readonly Uint8Array[], Uint8Array])[],
): void {
  if (reverted) {
    report.reverted++;
    if (logs.length > 0) report.revertedWithLogs++;
  }
  for (const [address, topics, data] of logs) {
    report.logs++;
    const a = bytesToHex(address);
    report.logsByAddress[a] = (report.logsByAddress[a] ?? 0) + 1;
    report.logsByTopicCount[topics.length] = (report.logsByTopicCount[topics.length] ?? 0) + 1;
    if (data.length === 0) report.logsWithEmptyData++;
    if (data.length >= 200) report.logsWithDataAtLeast200++;
  }
}

function hex(h: string): Uint8Array {
  return hexToBytes(h as `0x${string}`);
}

export async function executeChain(dir?: string, storageQueries: readonly string[] = []): Promise<ExecuteReport> {
  const genesis = readGenesis(dir);
  const common = createCommonFromGethGenesis(genesis as never, { chain: 'fixture-exec' });
  const vm = await createVM({ common: common.copy(), setHardfork: true });
  for (const [addr, acct] of Object.entries(genesis.alloc)) {
    const address = new Address(hex(addr));
    await vm.stateManager.putAccount(
      address,
      createAccount({ balance: BigInt(acct.balance), nonce: BigInt(acct.nonce ?? 0) }),
    );
    if (acct.code !== undefined) await vm.stateManager.putCode(address, hex(acct.code));
    for (const [k, v] of Object.entries(acct.storage ?? {})) await vm.stateManager.putStorage(address, hex(k), hex(v));
  }
  const genesisHeader = createBlockHeader(
    {
      number: 0n,
      gasLimit: BigInt(genesis.gasLimit),
      difficulty: BigInt(genesis.difficulty),
      timestamp: BigInt(genesis.timestamp),
      extraData: hex(genesis.extraData),
      nonce: hex(genesis.nonce),
      mixHash: hex(genesis.mixHash),
      coinbase: genesis.coinbase as `0x${string}`,
      stateRoot: await vm.stateManager.getStateRoot(),
    },
    { common, setHardfork: true },
  );

  const report = emptyReport();
  let parentHash = genesisHeader.hash();
  for (const [i, encoded] of splitRlpItems(readChain(dir)).entries()) {
    const block = createBlockFromRLP(encoded, { common, setHardfork: true });
    const where = `block #${block.header.number} (file item ${i})`;
    if (!equalsBytes(block.header.parentHash, parentHash))
      throw new Error(`${where}: parentHash does not link to the previous block`);
    // The header against its parent (difficulty, gas limit, base fee) is checked by the decoder;
    // the VM here has no blockchain to look the parent up in.
    const result = await runBlock(vm, { block, skipHeaderValidation: true });
    if (!equalsBytes(result.stateRoot, block.header.stateRoot)) throw new Error(`${where}: state root mismatch`);
    for (const receipt of result.receipts)
      countReceipt(report, 'status' in receipt && receipt.status === 0, receipt.logs);
    parentHash = block.hash();
    report.blocks++;
    report.headStateRoot = bytesToHex(result.stateRoot);
  }
  for (const q of storageQueries) {
    const [address, slot] = q.split(':');
    if (address === undefined || slot === undefined)
      throw new Error(`storage query ${JSON.stringify(q)}: expected <address>:<slot>`);
    const value = await vm.stateManager.getStorage(new Address(hex(address)), hex(slot));
    report.storage[q] = `0x${Buffer.from(value).toString('hex').padStart(64, '0')}`;
  }
  return report;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  executeChain(process.argv[2], process.argv.slice(3))
    .then((report) => process.stdout.write(`${JSON.stringify(report)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    });
}
