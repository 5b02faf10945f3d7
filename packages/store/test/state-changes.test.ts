// stateChanges (state-diff.ts), the change set the flat state history writes per block, against a
// model: states built with @ethereumjs/mpt, then a block that deletes an account with storage,
// re-creates another with a different storage, changes a balance, clears and sets slots, and
// adds an account. Every slot a deleted or re-created account had and no longer has is listed
// as cleared (the history's tombstones), and nothing that kept its value is listed.
import { createMPT } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, MapDB, bigIntToUnpaddedBytes } from '@ethereumjs/util';
import { stateChanges } from '../src/trie/state-diff.js';
import type { NodeSource } from '../src/trie/trie-read.js';
import { hex } from './random.js';

type Model = Map<string, { balance: bigint; storage: Map<string, bigint> }>;

const key = (b: number): Uint8Array => new Uint8Array(32).fill(b);

async function build(db: MapDB<string, Uint8Array | string>, model: Model): Promise<Uint8Array> {
  const state = await createMPT({ db, useKeyHashing: false });
  for (const [k, a] of model) {
    const st = await createMPT({ db, useKeyHashing: false });
    for (const [s, v] of a.storage)
      await st.put(Uint8Array.from(Buffer.from(s, 'hex')), RLP.encode(bigIntToUnpaddedBytes(v)));
    const account = [bigIntToUnpaddedBytes(1n), bigIntToUnpaddedBytes(a.balance), st.root(), KECCAK256_NULL];
    await state.put(Uint8Array.from(Buffer.from(k, 'hex')), RLP.encode(account));
  }
  return state.root();
}

test('a deleted or re-created account lists every slot it lost; unchanged slots are not listed', async () => {
  const db = new MapDB<string, Uint8Array | string>();
  const nodes: NodeSource = (h) => {
    const v = db._database.get(hex(h));
    return v === undefined ? undefined : typeof v === 'string' ? Uint8Array.from(Buffer.from(v, 'hex')) : v;
  };
  const A = hex(key(0xa1));
  const B = hex(key(0xb2));
  const C = hex(key(0xc3));
  const D = hex(key(0xd4));
  const s = (b: number) => hex(key(b));
  const before: Model = new Map([
    [
      A,
      {
        balance: 1n,
        storage: new Map([
          [s(1), 5n],
          [s(2), 6n],
          [s(3), 7n],
        ]),
      },
    ],
    [
      B,
      {
        balance: 2n,
        storage: new Map([
          [s(1), 8n],
          [s(2), 9n],
        ]),
      },
    ],
    [
      C,
      {
        balance: 3n,
        storage: new Map([
          [s(1), 10n],
          [s(2), 11n],
        ]),
      },
    ],
  ]);
  const after: Model = new Map([
    // A deleted; B re-created: slot 2 kept its value, slot 1 gone, slot 4 new.
    [
      B,
      {
        balance: 0n,
        storage: new Map([
          [s(2), 9n],
          [s(4), 12n],
        ]),
      },
    ],
    // C: balance changed, slot 1 cleared, slot 2 changed.
    [C, { balance: 4n, storage: new Map([[s(2), 13n]]) }],
    [D, { balance: 5n, storage: new Map([[s(9), 1n]]) }],
  ]);
  const parentRoot = await build(db, before);
  const root = await build(db, after);
  const accounts: string[] = [];
  const slots: string[] = [];
  await stateChanges(nodes, parentRoot, root, {
    account: (k, v) => accounts.push(`${hex(k)}:${v === null ? 'deleted' : 'set'}`),
    slot: (a, k, v) => slots.push(`${hex(a)}/${hex(k)}:${v === null ? 'cleared' : BigInt(`0x${hex(v)}`)}`),
  });
  expect(accounts.sort()).toEqual([`${A}:deleted`, `${B}:set`, `${C}:set`, `${D}:set`].sort());
  expect(slots.sort()).toEqual(
    [
      `${A}/${s(1)}:cleared`,
      `${A}/${s(2)}:cleared`,
      `${A}/${s(3)}:cleared`,
      `${B}/${s(1)}:cleared`,
      `${B}/${s(4)}:12`,
      `${C}/${s(1)}:cleared`,
      `${C}/${s(2)}:13`,
      `${D}/${s(9)}:1`,
    ].sort(),
  );
  // The same root on both sides: nothing.
  let none = 0;
  await stateChanges(nodes, root, root, { account: () => none++, slot: () => none++ });
  expect(none).toBe(0);
});
