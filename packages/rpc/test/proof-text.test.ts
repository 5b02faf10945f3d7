// The eth_getProof answer the server writes (formatters/proof.ts proofWriter: ASCII bytes written
// directly into the transport's memory) against JSON.stringify of the object formatter
// (formatProof), over many random (block, address, storage keys) of the fixture chain: accounts
// that exist (senders, recipients, created contracts), absent ones, present and absent slots,
// keys spelled as quantities and as 32-byte data. Each answer's proofs are also verified with
// @ethereumjs/mpt's verifyMerkleProof against the block's state root and the account's
// storage root. Each request is sent four times (see the loop).
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import { formatProof } from '../src/formatters/proof.js';

const fromHex = (h: string): Uint8Array => Buffer.from(h.slice(2), 'hex');
const toHex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;

test('fixtures: proof answers equal the object formatter and verify, over random blocks, accounts and slots', async () => {
  const c = await datadirCopy('fixtures');
  const store = await openChainStore(c.dir);
  const svc = createRpcService(store);
  try {
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const head = Number((await store.head()).number);
    // Accounts of the chain: every sender and recipient (contracts among them).
    const addresses = new Set<string>();
    for (let n = 1; n <= head; n += 7) {
      const block = await store.block((await store.canonicalHash(BigInt(n))) as Uint8Array);
      for (const tx of block?.transactions ?? []) {
        addresses.add(toHex(tx.from));
        if (tx.to !== null) addresses.add(toHex(tx.to));
      }
    }
    const known = [...addresses];
    expect(known.length).toBeGreaterThan(20);
    const seen = { present: 0, absent: 0, slotValues: 0, slotProofs: 0 };
    for (let i = 0; i < 400; i++) {
      const n = 1 + rnd(head);
      const header = await store.header((await store.canonicalHash(BigInt(n))) as Uint8Array);
      if (header === undefined) throw new Error(`block ${n}`);
      const address =
        rnd(5) === 0 ? toHex(Uint8Array.from({ length: 20 }, () => rnd(256))) : (known[rnd(known.length)] as string);
      // 0-3 keys: small slots as quantities ("0x2"), as 32-byte data, or random 32-byte words.
      const keys: string[] = [];
      for (let k = rnd(4); k > 0; k--) {
        const kind = rnd(3);
        keys.push(
          kind === 0
            ? `0x${rnd(8).toString(16)}`
            : kind === 1
              ? `0x${rnd(8).toString(16).padStart(64, '0')}`
              : toHex(Uint8Array.from({ length: 32 }, () => rnd(256))),
        );
      }
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getProof',
        params: [address, keys, `0x${n.toString(16)}`],
      });
      const lengths = keys.map((k) => (k.length === 66 ? 32 : Math.ceil((k.length - 2) / 2)));
      const record = await store.proof(
        header.stateRoot,
        fromHex(address),
        keys.map((k) =>
          k.length === 66 ? fromHex(k) : fromHex(`0x${k.slice(2).padStart(2 * Math.ceil((k.length - 2) / 2), '0')}`),
        ),
      );
      const want = `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify(formatProof(record, lengths))}}`;
      // As the transport takes it (encode() into its own dirty memory, at an offset), twice (the
      // second from the memo, which keeps its bytes from then on), then as text,
      // then encoded once more from the kept bytes.
      for (const as of ['bytes', 'bytes', 'text', 'bytes'] as const) {
        const r = await svc.handle(body);
        if (as === 'text') {
          expect(r.body).toBe(want);
          continue;
        }
        expect(r.encode).toBeDefined();
        const out = (r.encode as NonNullable<typeof r.encode>)((n) => Buffer.alloc(n + 7, 0xff).subarray(3, 3 + n));
        expect(out.length).toBe(r.size);
        expect(Buffer.from(out).toString('latin1')).toBe(want);
      }
      // The answer's proofs verify against the roots.
      const result = (
        JSON.parse(want) as {
          result: {
            accountProof: string[];
            storageHash: string;
            storageProof: { key: string; value: string; proof: string[] }[];
          };
        }
      ).result;
      const account = await verifyMerkleProof(fromHex(address), result.accountProof.map(fromHex), {
        root: header.stateRoot,
        useKeyHashing: true,
      });
      if (account === null) seen.absent++;
      else {
        seen.present++;
        const fields = RLP.decode(account) as Uint8Array[];
        expect(toHex(fields[2] as Uint8Array)).toBe(result.storageHash);
      }
      for (const sp of result.storageProof) {
        if (sp.proof.length === 0) {
          expect(sp.value).toBe('0x0');
          continue;
        }
        seen.slotProofs++;
        const slot = fromHex(`0x${sp.key.slice(2).padStart(64, '0')}`);
        const v = await verifyMerkleProof(slot, sp.proof.map(fromHex), {
          root: fromHex(result.storageHash),
          useKeyHashing: true,
        });
        const value =
          v === null
            ? 0n
            : BigInt(toHex(RLP.decode(v) as Uint8Array) === '0x' ? 0 : toHex(RLP.decode(v) as Uint8Array));
        expect(`0x${value.toString(16)}`).toBe(sp.value);
        if (value !== 0n) seen.slotValues++;
      }
    }
    // The sample covered present and absent accounts, and storage with and without values.
    expect(seen.present).toBeGreaterThan(100);
    expect(seen.absent).toBeGreaterThan(20);
    expect(seen.slotProofs).toBeGreaterThan(20);
    expect(seen.slotValues).toBeGreaterThan(0);
  } finally {
    await store.close();
    await c.cleanup();
  }
}, 120_000);
