// The scaled chain of the varied bench (bench/src/scaled-chain.ts) and its reply checker
// (bench/src/varied-scaled.ts), against anvil itself: a short chain is built, then
// - the bench's storage model equals anvil's storage (another EVM: revm) for every slot written,
//   at every block;
// - anvil's own replies (blocks, full blocks, transactions, storage, account and slot proofs at
//   the head, logs) pass the checker;
// - the same replies with one field altered (a header field, a tx field, a storage word, a proof
//   node, a proven value, a log) are rejected.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { spawnChild, stopChild } from '../src/children.js';
import {
  CONTRACTS,
  anvilArgs,
  buildScaledChain,
  scaledGenesis,
  senderWallets,
  storageAt,
  word,
} from '../src/scaled-chain.js';
import type { ScaledModel } from '../src/scaled-chain.js';
import { ScaledChecker } from '../src/varied-scaled.js';
import { callMaker, qty } from '../src/varied-mix.js';
import type { Call, Reply } from '../src/varied-mix.js';
import { writeFileSync } from 'node:fs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const BLOCKS = 8;

describe('the scaled chain and its checker, against anvil', () => {
  let dir: string;
  let anvil: ChildProcess;
  let url: string;
  let m: ScaledModel;
  let checker: ScaledChecker;
  const call = callMaker();

  const ask = async (c: Call): Promise<Reply> => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: c.body });
    return (await r.json()) as Reply;
  };
  /** The checker's verdict, or the error it throws. */
  const verdict = async (c: Call, r: Reply): Promise<string> =>
    checker.check(c, r, 'anvil').catch((e: unknown) => `rejected: ${(e as Error).message.slice(0, 80)}`);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-scaled-'));
    const genesisPath = join(dir, 'genesis.json');
    writeFileSync(genesisPath, JSON.stringify(scaledGenesis(senderWallets().map((w) => w.address.toLowerCase()))));
    const port = 20000 + Math.floor(Math.random() * 20000);
    url = `http://127.0.0.1:${port}`;
    anvil = spawnChild(
      join(root, 'node_modules', '.bin', 'anvil'),
      anvilArgs(genesisPath, port, join(dir, 'anvil-cache')),
      { stdio: 'ignore' },
    );
    for (let i = 0; ; i++) {
      try {
        await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
        });
        break;
      } catch {
        if (i > 200) throw new Error('anvil did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    m = await buildScaledChain(url, dir, BLOCKS, () => {});
    checker = new ScaledChecker(m);
  }, 120_000);

  afterAll(async () => {
    if (anvil !== undefined) await stopChild(anvil);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the storage model equals anvil for every slot at every block', async () => {
    let compared = 0;
    let nonZero = 0;
    for (let c = 0; c < CONTRACTS; c++) {
      for (const slot of m.slotKeys[c] as string[]) {
        for (let b = 1; b <= BLOCKS; b++) {
          const r = await ask(call('storage', 'eth_getStorageAt', [m.contracts[c], slot, qty(b)]));
          const want = word(storageAt(m, c, slot, b));
          expect([c, slot, b, r.result]).toEqual([c, slot, b, want]);
          compared++;
          if (want !== word(0n)) nonZero++;
        }
      }
    }
    expect(m.counts.slots).toBeGreaterThan(BLOCKS * 10);
    expect(nonZero).toBeGreaterThan(compared / 3);
    // Overwrites happened: some slot holds two values over time.
    expect(m.slots.some((s) => [...s.values()].some((h) => new Set(h.values).size > 1))).toBe(true);
  }, 120_000);

  test("anvil's replies pass the checker, altered ones are rejected", async () => {
    const head = BLOCKS;
    const tx = m.blocks[head]?.txs[TRANSFERS_INDEX] as string;
    const callTx = m.blocks[head]?.txs.at(-1) as string;
    const slot = (m.slotKeys[0] as string[])[0] as string;
    const fresh = m.fresh.at(-1) as { address: string };
    const cases: [Call, (r: Record<string, unknown>) => void][] = [
      [
        call('blockHashes', 'eth_getBlockByNumber', [qty(head), false]),
        (r) => (r['gasUsed'] = qty(Number(r['gasUsed']) + 1)),
      ],
      [
        call('blockFull', 'eth_getBlockByNumber', [qty(head), true]),
        (r) => (((r['transactions'] as Record<string, unknown>[])[0] as Record<string, unknown>)['value'] = '0x1'),
      ],
      [call('tx', 'eth_getTransactionByHash', [tx]), (r) => (r['nonce'] = qty(Number(r['nonce']) + 1))],
      [
        call('tx', 'eth_getTransactionByHash', [callTx]),
        (r) => (r['input'] = `${(r['input'] as string).slice(0, -2)}00`),
      ],
      [call('storage', 'eth_getStorageAt', [m.contracts[0], slot, qty(head)]), (r) => (r['__word'] = true)],
      [call('account', 'eth_getProof', [fresh.address, [], qty(head)]), (r) => (r['balance'] = '0x1')],
      [
        call('account', 'eth_getProof', [fresh.address, [], qty(head)]),
        (r) => {
          const p = r['accountProof'] as string[];
          p[0] = `${(p[0] as string).slice(0, 10)}${(p[0] as string)[10] === '0' ? '1' : '0'}${(p[0] as string).slice(11)}`;
        },
      ],
      [
        call('proof', 'eth_getProof', [m.contracts[0], [slot], qty(head)]),
        (r) => (((r['storageProof'] as Record<string, unknown>[])[0] as Record<string, unknown>)['value'] = '0x1'),
      ],
      [
        call('logs', 'eth_getLogs', [{ address: m.contracts[0], fromBlock: '0x1', toBlock: qty(head) }]),
        (r) => (r['__drop'] = true),
      ],
    ];
    for (const [c, alter] of cases) {
      const r = await ask(c);
      expect([c.body, await verdict(c, r)]).toEqual([c.body, 'ok']);
      // Alter a copy; storage words and log lists are not objects: handled by markers.
      const copy = JSON.parse(JSON.stringify(r)) as { result: unknown };
      if (c.kind === 'storage') copy.result = word(BigInt(copy.result as string) + 1n);
      else if (c.kind === 'logs') {
        expect((copy.result as unknown[]).length).toBeGreaterThan(0);
        (copy.result as unknown[]).splice(1, 1);
      } else alter(copy.result as Record<string, unknown>);
      expect([c.body, (await verdict(c, copy)).slice(0, 9)]).toEqual([c.body, 'rejected:']);
    }
  }, 120_000);
});

const TRANSFERS_INDEX = 0;
