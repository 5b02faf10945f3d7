// The one-pass genesis state (genesis-state.ts) against @ethereumjs/statemanager's
// generateCanonicalGenesis on the same alloc: the same state root, every account leaf read back
// from the nodes the builder handed out alone equal to the state manager's, every code stored
// under "c" ++ its hash; on the fixture chain's and the execution-apis chain's genesis.json and
// on an alloc of the edge cases (storage with zero values and short values, a slot given twice,
// empty code, nonces, an address given in two cases).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { parseGethGenesisState } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { MerkleStateManager } from '@ethereumjs/statemanager';
import { createAddressFromString, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { createMPT } from '@ethereumjs/mpt';
import { keccak256, trieGetSync } from '@chainnode/store';
import { chainDir } from '@chainnode/testkit';
import { buildGenesisState } from '../src/genesis-state.js';
import { buildGenesis, commonFromGenesis } from '../src/genesis.js';

interface Built {
  root: Uint8Array;
  nodes: Map<string, Uint8Array>;
  codes: Map<string, Uint8Array>;
}

function build(json: GethGenesis): Built {
  const nodes = new Map<string, Uint8Array>();
  const codes = new Map<string, Uint8Array>();
  const { root } = buildGenesisState(parseGethGenesisState(json), {
    node: (h, e) => nodes.set(bytesToHex(h), e),
    code: (k, c) => codes.set(bytesToHex(k), c),
  });
  return { root, nodes, codes };
}

/** The state manager's genesis on an in-memory trie, as the importer built it before. */
async function reference(json: GethGenesis): Promise<MerkleStateManager> {
  const common = commonFromGenesis(json);
  const sm = new MerkleStateManager({ common, trie: await createMPT({ useKeyHashing: true }) });
  await sm.generateCanonicalGenesis(parseGethGenesisState(json));
  return sm;
}

async function expectSameState(json: GethGenesis): Promise<number> {
  const ours = build(json);
  const sm = await reference(json);
  expect(bytesToHex(ours.root)).toBe(bytesToHex(await sm.getStateRoot()));
  const get = (h: Uint8Array): Uint8Array | undefined => ours.nodes.get(bytesToHex(h));
  let accounts = 0;
  for (const address of Object.keys(parseGethGenesisState(json))) {
    const account = await sm.getAccount(createAddressFromString(address));
    const leaf = trieGetSync(ours.root, keccak256(hexToBytes(address as `0x${string}`)), get);
    expect(leaf).toBeDefined();
    expect(bytesToHex(leaf as Uint8Array)).toBe(bytesToHex((account as { serialize(): Uint8Array }).serialize()));
    const code = await sm.getCode(createAddressFromString(address));
    const codeHash = (RLP.decode(leaf as Uint8Array) as Uint8Array[])[3] as Uint8Array;
    if (code.length > 0) expect(ours.codes.get(bytesToHex(Uint8Array.of(0x63, ...codeHash)))).toEqual(code);
    accounts++;
  }
  return accounts;
}

const real = (['fixtures', 'execution-apis'] as const).filter((c) => chainDir(c) !== undefined);

test.each(real)('the %s genesis: the same state root, leaves and code as the state manager', async (chain) => {
  const json = JSON.parse(readFileSync(join(chainDir(chain) as string, 'genesis.json'), 'utf8')) as GethGenesis;
  expect(await expectSameState(json)).toBeGreaterThan(0);
});

test('edge cases of an alloc: zero and short values, a slot twice, empty code, nonces, one address in two cases', async () => {
  const json = JSON.parse(readFileSync(join(chainDir('fixtures') as string, 'genesis.json'), 'utf8')) as GethGenesis;
  const slot = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;
  const edge = {
    ...json,
    alloc: {
      '0x1000000000000000000000000000000000000001': {
        balance: '0x10',
        nonce: '0x5',
        code: '0x6001600055',
        storage: { [slot(1)]: '0x01', [slot(2)]: '0x00', [slot(3)]: '0x000000ff', [slot(4)]: slot(0) },
      },
      '0x1000000000000000000000000000000000000002': { balance: '0', code: '0x' },
      '0x1000000000000000000000000000000000000003': { balance: '12345', storage: { [slot(9)]: '0x00' } },
      '0x100000000000000000000000000000000000000A': { balance: '0x1' },
      '0x100000000000000000000000000000000000000a': { balance: '0x2', storage: { [slot(7)]: '0x07' } },
    },
  } as unknown as GethGenesis;
  expect(await expectSameState(edge)).toBe(4);
  // An empty code is stored (the state manager stores it too); no storage row for zero values.
  const ours = build(edge);
  expect(ours.codes.size).toBe(2);
});

test('a storage key that is not 32 bytes is refused, as the state manager refuses it', async () => {
  const json = JSON.parse(readFileSync(join(chainDir('fixtures') as string, 'genesis.json'), 'utf8')) as GethGenesis;
  const bad = {
    ...json,
    alloc: { '0x1000000000000000000000000000000000000001': { balance: '0x1', storage: { '0x01': '0x01' } } },
  } as unknown as GethGenesis;
  expect(() => build(bad)).toThrow('is not 32 bytes');
  await expect(reference(bad)).rejects.toThrow('32 bytes');
});

test('buildGenesis: the block over the built root, its hash what the state manager path gave', async () => {
  const json = JSON.parse(readFileSync(join(chainDir('fixtures') as string, 'genesis.json'), 'utf8')) as GethGenesis;
  const block = await buildGenesis(json, commonFromGenesis(json));
  const sm = await reference(json);
  expect(bytesToHex(block.header.stateRoot)).toBe(bytesToHex(await sm.getStateRoot()));
  // The fixture chain's block 1 names its parent: the genesis hash the import has always written.
  const fixturesHead = readFileSync(join(chainDir('fixtures') as string, 'chain.rlp'));
  const first = RLP.decode(Uint8Array.from(fixturesHead), true).data as unknown as Uint8Array[][];
  const parentHash = (first[0] as Uint8Array[])[0] as Uint8Array;
  expect(bytesToHex(block.hash())).toBe(bytesToHex(parentHash));
});
