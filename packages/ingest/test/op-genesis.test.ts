// A genesis.json in op-geth's format (geth's, plus the OP fork schedule and a `config.optimism`
// block, field names as op-geth's params.ChainConfig spells them) loads through the same
// readGenesisJson / commonFromGenesis as geth's, and core's chainFamilyOf tells the two apart.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GethGenesis } from '@ethereumjs/common';
import { createMPT } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP, bytesToHex, setLengthLeft } from '@ethereumjs/util';
import { chainFamilyOf, opForkActive } from '@chainnode/core';
import { cancunConfig, opDevnetConfig, repoRoot, tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { anvilGenesisJson, buildGenesis, commonFromGenesis, readGenesisJson } from '../src/genesis.js';

const genesisFields = {
  nonce: '0x0',
  timestamp: '0x0',
  extraData: '0x',
  gasLimit: '0x1c9c380',
  difficulty: '0x0',
  mixHash: `0x${'00'.repeat(32)}`,
  coinbase: '0x4200000000000000000000000000000000000011',
  alloc: { f39fd6e51aad88f6f4ce6ab8827279cfffb92266: { balance: '0x21e19e0c9bab2400000' } },
  number: '0x0',
  gasUsed: '0x0',
  parentHash: `0x${'00'.repeat(32)}`,
  baseFeePerGas: '0x3b9aca00',
};

/** Every OP fork from genesis (a devnet's, anvil --network optimism's schedule). */
const opDevnet = {
  config: opDevnetConfig(901),
  ...genesisFields,
};

/** Bedrock at a later block and the OP forks at later times, Ethereum's forks at the same times. */
const opScheduled = {
  config: {
    ...cancunConfig(10),
    londonBlock: 1000,
    arrowGlacierBlock: 1000,
    grayGlacierBlock: 1000,
    mergeNetsplitBlock: 1000,
    bedrockBlock: 1000,
    regolithTime: 0,
    shanghaiTime: 1_704_992_401,
    canyonTime: 1_704_992_401,
    deltaTime: 1_708_560_000,
    cancunTime: 1_710_374_401,
    ecotoneTime: 1_710_374_401,
    optimism: { eip1559Elasticity: 6, eip1559Denominator: 50, eip1559DenominatorCanyon: 250 },
  },
  ...genesisFields,
  baseFeePerGas: undefined,
};

describe("op-geth's genesis.json", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await tempDir('op-genesis-');
  });
  afterAll(() => tmp.cleanup());

  test.each([
    ['every fork at genesis', opDevnet, 901n, 'prague'],
    ['forks scheduled later', opScheduled, 10n, 'berlin'],
  ])('%s: loads, builds its Common, and is of the optimism family', async (_name, json, chainId, genesisFork) => {
    const path = join(tmp.dir, `${chainId}.json`);
    await writeFile(path, JSON.stringify(json));
    const g = await readGenesisJson(path);
    expect(chainFamilyOf(g)).toBe('optimism');
    const common = commonFromGenesis(g);
    expect(common.chainId()).toBe(chainId);
    expect(common.getHardforkBy({ blockNumber: 0n, timestamp: 0n })).toBe(genesisFork);
    // The Ethereum forks of the schedule are read as geth's (the OP ones are not Common's).
    if (json === opScheduled) {
      expect(common.getHardforkBy({ blockNumber: 1000n, timestamp: 1_704_992_401n })).toBe('shanghai');
      expect(common.getHardforkBy({ blockNumber: 1000n, timestamp: 1_710_374_401n })).toBe('cancun');
    }
  });

  test("geth's own genesis.json (the fixture chain's) is of the ethereum family", async () => {
    const g = await readGenesisJson(join(repoRoot(), 'fixtures', 'genesis.json'));
    expect(chainFamilyOf(g)).toBe('ethereum');
    expect(() => commonFromGenesis(g)).not.toThrow();
  });
});

describe('the OP-stack forks at genesis', () => {
  const HISTORY = '0000f90827f1c53a10cb7a02335b175320002935';
  const passerStorage = { [`0x${'00'.repeat(31)}01`]: `0x${'00'.repeat(31)}07` };
  const isthmus = {
    ...opDevnet,
    alloc: {
      ...opDevnet.alloc,
      '4200000000000000000000000000000000000016': { balance: '0x0', storage: passerStorage },
    },
  } as unknown as GethGenesis;

  test('fork times: active from their time on, never on an Ethereum chain', () => {
    expect(opForkActive(opDevnet, 'isthmus', 0n)).toBe(true);
    expect(opForkActive(opDevnet, 'jovian', 0n)).toBe(false);
    expect(opForkActive(opScheduled, 'ecotone', 1_710_374_400n)).toBe(false);
    expect(opForkActive(opScheduled, 'ecotone', 1_710_374_401n)).toBe(true);
    expect(opForkActive({ config: { ...cancunConfig(1), isthmusTime: 0 } }, 'isthmus', 0n)).toBe(false);
  });

  test("Isthmus at genesis: block 0's withdrawalsRoot is the L2ToL1MessagePasser's storage root (op-geth's genesis)", async () => {
    const storage = await createMPT({ useKeyHashing: true });
    await storage.put(setLengthLeft(Uint8Array.of(1), 32), RLP.encode(Uint8Array.of(7)));
    const common = commonFromGenesis(isthmus);
    const built = await buildGenesis(isthmus, common);
    expect(bytesToHex(built.header.withdrawalsRoot as Uint8Array)).toBe(bytesToHex(storage.root()));
    // Without the predeploy: the empty trie's root, as before Isthmus.
    const plain = await buildGenesis(opDevnet as unknown as GethGenesis, common);
    expect(plain.header.withdrawalsRoot).toEqual(KECCAK256_RLP);
  });

  test('anvil --init deploys the EIP-2935 history contract (nonce 0) at a Prague genesis whose alloc lacks it', () => {
    const g = opDevnet as unknown as GethGenesis;
    const alloc = anvilGenesisJson(g)?.alloc as Record<string, { code: string; nonce: string }>;
    expect(alloc[HISTORY]).toMatchObject({ nonce: '0x0', balance: '0x0' });
    expect(alloc[HISTORY]?.code).toMatch(/^0x3373fffffffffffffffffffffffffffffffffffffffe14/);
    expect(Object.keys(alloc)).toHaveLength(2);
    // Already in the alloc (with code, as op-geth's genesis has it), or no Prague: as written.
    const withCode = { ...g, alloc: { ...g.alloc, [`0x${HISTORY}`]: { balance: '0x0', nonce: '0x1', code: '0x60' } } };
    expect(anvilGenesisJson(withCode)).toBeUndefined();
    expect(anvilGenesisJson(opScheduled as unknown as GethGenesis)).toBeUndefined();
  });
});
