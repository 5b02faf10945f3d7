// Re-executes fixtures/chain.rlp with @ethereumjs/vm from fixtures/genesis.json, the way the
// importer will: each block's state root, receipts root, bloom and gas used must match what the
// VM computes, and the logs the VM produces must have the promised shape.
import { createBlockFromRLP, createBlockHeader } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { Address, bytesToHex, createAccount, hexToBytes } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';

import { readChain, readGenesis, splitRlpItems } from './fixture-files.js';

describe('fixtures/chain.rlp executed with @ethereumjs/vm', () => {
  it('reproduces every root and the promised logs', async () => {
    const genesis = readGenesis();
    const common = createCommonFromGethGenesis(genesis as never, { chain: 'fixture-exec' });
    const vm = await createVM({ common: common.copy(), setHardfork: true });
    for (const [addr, acct] of Object.entries(genesis.alloc)) {
      const address = new Address(hexToBytes(addr as `0x${string}`));
      await vm.stateManager.putAccount(address, createAccount({ balance: BigInt(acct.balance), nonce: BigInt(acct.nonce ?? 0) }));
      if (acct.code !== undefined) await vm.stateManager.putCode(address, hexToBytes(acct.code as `0x${string}`));
      for (const [k, v] of Object.entries(acct.storage ?? {})) {
        await vm.stateManager.putStorage(address, hexToBytes(k as `0x${string}`), hexToBytes(v as `0x${string}`));
      }
    }
    const genesisHeader = createBlockHeader(
      {
        number: 0n,
        gasLimit: BigInt(genesis.gasLimit),
        difficulty: BigInt(genesis.difficulty),
        timestamp: BigInt(genesis.timestamp),
        extraData: hexToBytes(genesis.extraData as `0x${string}`),
        nonce: hexToBytes(genesis.nonce as `0x${string}`),
        mixHash: hexToBytes(genesis.mixHash as `0x${string}`),
        coinbase: genesis.coinbase as `0x${string}`,
        stateRoot: await vm.stateManager.getStateRoot(),
      },
      { common, setHardfork: true },
    );

    let parentHash = genesisHeader.hash();
    let logs = 0;
    let reverted = 0;
    let revertedWithLogs = 0;
    const logsByAddress = new Map<string, number>();
    const topicCounts = [0, 0, 0, 0, 0];
    let emptyData = 0;
    let bigData = 0;

    for (const encoded of splitRlpItems(readChain())) {
      const block = createBlockFromRLP(encoded, { common, setHardfork: true });
      expect(bytesToHex(block.header.parentHash)).toBe(bytesToHex(parentHash));
      // Not `generate`: runBlock throws on any mismatch of state root, receipts root, bloom or
      // gas used, and validates the transactions root, uncles hash and signatures. The header
      // is checked against its parent by the decoder test (the VM has no blockchain here).
      const result = await runBlock(vm, { block, skipHeaderValidation: true });
      expect(bytesToHex(result.stateRoot)).toBe(bytesToHex(block.header.stateRoot));
      expect(bytesToHex(result.receiptsRoot)).toBe(bytesToHex(block.header.receiptTrie));
      expect(bytesToHex(result.logsBloom)).toBe(bytesToHex(block.header.logsBloom));
      expect(result.gasUsed).toBe(block.header.gasUsed);

      for (const receipt of result.receipts) {
        if ('status' in receipt && receipt.status === 0) {
          reverted++;
          if (receipt.logs.length > 0) revertedWithLogs++;
        }
        for (const [address, topics, data] of receipt.logs) {
          logs++;
          const a = bytesToHex(address);
          logsByAddress.set(a, (logsByAddress.get(a) ?? 0) + 1);
          topicCounts[topics.length] = (topicCounts[topics.length] ?? 0) + 1;
          if (data.length === 0) emptyData++;
          if (data.length >= 200) bigData++;
        }
      }
      parentHash = block.hash();
    }

    expect(logs).toBeGreaterThanOrEqual(30_000);
    const [, hotCount] = [...logsByAddress.entries()].reduce((a, b) => (b[1] > a[1] ? b : a));
    expect(hotCount).toBeGreaterThan(10_000);
    expect(hotCount / logs).toBeGreaterThanOrEqual(0.3);
    const rare = [...logsByAddress.values()].filter((n) => n <= 20);
    expect(rare.length).toBeGreaterThanOrEqual(20);
    for (let t = 0; t <= 4; t++) expect(topicCounts[t]).toBeGreaterThan(0);
    expect(emptyData).toBeGreaterThan(0);
    expect(bigData).toBeGreaterThan(0);
    expect(reverted).toBeGreaterThan(0);
    expect(revertedWithLogs).toBe(0);
  }, 1_200_000); // ~80 s of CPU; slower on a shared machine
});
