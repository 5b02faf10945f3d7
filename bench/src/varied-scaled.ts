// `--chain scaled`: the varied bench on a chain larger than the caches (bench/src/scaled-chain.ts
// builds it with anvil and models it), imported into chainnode from anvil in the same run, so both
// servers hold the same blocks. Every reply is checked against the bench's model:
// - blocks: keccak(RLP(Cancun header)) recomputed from the reply's own fields equals the model's
//   hash (itself recomputed at build time and chained by parentHash), the tx hashes are the ones
//   signed here; full transactions: each tx's hash recomputed from its fields (keccak of the
//   canonical encoding rebuilt from them) is the hash of the bytes signed here, at its location.
// - eth_getTransactionByHash: the same recomputation, location and sender.
// - eth_getStorageAt / eth_getBalance: the model's value at that block.
// - eth_getProof: account and storage proofs verified with @ethereumjs/mpt against the block's
//   stateRoot (from the model), the account's fields and the storage value against the model.
// - eth_getLogs: equal to a brute-force scan of the model's record of emitted logs.
// anvil keeps the state of its last blocks only (started with --prune-history W: see below): its
// state answers at older blocks are errors, counted as unsupported and left out of its load.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { runChild, spawnChild, stopChild, waitRpc } from './children.js';
import {
  CODE_HASH,
  CONTRACTS,
  EVENT,
  anvilArgs,
  buildScaledChain,
  headerHash,
  senderWallets,
  scaledGenesis,
  storageAt,
  txHashOf,
  word,
} from './scaled-chain.js';
import type { ModelBlock, ScaledModel } from './scaled-chain.js';
import { anvilWindowSkips, callMaker, mixOf, qty, shuffle } from './varied-mix.js';
import type { Call, ChainBuilder, ChainUnderTest, Mix, Reply, ServerName } from './varied-mix.js';
import { Rng, keccak256 } from './synth.js';
import { writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

export interface ScaledOptions {
  root: string;
  cli: string;
  dir: string;
  blocks: number;
  bodies: number;
  logBodies: number;
  /** States anvil keeps (its --prune-history). */
  anvilHistory: number;
  /** eth_getProof bodies per mix sent to anvil (each costs it hundreds of ms). */
  anvilProofSample: number;
  noAnvil: boolean;
  /**
   * --keep: `dir` is kept after the run, with the model beside the datadir (model.json); a later
   * run with the same --keep and --no-anvil reuses both instead of building the chain again.
   */
  keep?: boolean;
  log: (line: string) => void;
}

/** The model as JSON: Maps and bigints tagged, so that reviveModel gives the same object back. */
function saveModel(path: string, m: ScaledModel): void {
  writeFileSync(
    path,
    JSON.stringify(m, (_k, v: unknown) =>
      v instanceof Map ? { $map: [...v.entries()] } : typeof v === 'bigint' ? { $big: v.toString() } : v,
    ),
  );
}

function loadModel(path: string): ScaledModel {
  return JSON.parse(readFileSync(path, 'utf8'), (_k, v: unknown) => {
    if (v !== null && typeof v === 'object' && '$map' in v) return new Map((v as { $map: [unknown, unknown][] }).$map);
    if (v !== null && typeof v === 'object' && '$big' in v) return BigInt((v as { $big: string }).$big);
    return v;
  }) as ScaledModel;
}

const EMPTY_ROOT = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
const EMPTY_CODE = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';
/** The minimal big-endian hex of a value as RLP stores it ('0x' for 0). */
const qtyHex = (v: bigint): string =>
  v === 0n ? '0x' : `0x${v.toString(16).padStart(v.toString(16).length + (v.toString(16).length % 2), '0')}`;
const hexOf = (b: Uint8Array): string => `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
const bytesOf = (h: string): Uint8Array => Buffer.from(h.slice(2), 'hex');

function buildMixes(m: ScaledModel, n: number, nLogs: number, anvilHistory: number): Mix[] {
  const rng = new Rng(15);
  const next = (): number => rng.next();
  const head = m.blocks.length - 1;
  const call = callMaker();
  const blockNo = (): number => 1 + rng.int(head);
  const hashes = Array.from({ length: n }, () => call('blockHashes', 'eth_getBlockByNumber', [qty(blockNo()), false]));
  const full = Array.from({ length: n }, () => call('blockFull', 'eth_getBlockByNumber', [qty(blockNo()), true]));
  const order = shuffle([...m.txList], next);
  const txs = Array.from({ length: n }, (_, i) =>
    call('tx', 'eth_getTransactionByHash', [i < order.length ? order[i] : order[rng.int(order.length)]]),
  );
  // (contract, slot, block): three quarters at or after the slot's first write.
  const tuples = Array.from({ length: n }, () => {
    const c = rng.int(CONTRACTS);
    const keys = m.slotKeys[c] as string[];
    const slot = keys[rng.int(keys.length)] as string;
    const first = (m.slots[c] as Map<string, { blocks: number[] }>).get(slot)?.blocks[0] as number;
    const block = rng.next() < 0.75 ? first + rng.int(head - first + 1) : blockNo();
    return { c, slot, block };
  });
  const storage = tuples.map((t, i) =>
    call('storage', 'eth_getStorageAt', [m.contracts[t.c], t.slot, qty(t.block)], i),
  );
  const proofs = tuples.map((t, i) => call('proof', 'eth_getProof', [m.contracts[t.c], [t.slot], qty(t.block)], i));
  // Account proofs of fresh accounts at a block at or after their creation (chainnode serves no
  // eth_getBalance: a chain-data node; the proof carries the balance).
  const accounts = Array.from({ length: n }, () => {
    const a = m.fresh[rng.int(m.fresh.length)] as { address: string; block: number };
    return call('account', 'eth_getProof', [a.address, [], qty(a.block + rng.int(head - a.block + 1))]);
  });
  const logs = Array.from({ length: nLogs }, () => {
    const width = 1 + rng.int(100);
    const from = 1 + rng.int(head - width + 1);
    return call('logs', 'eth_getLogs', [
      { address: m.contracts[rng.int(CONTRACTS)], fromBlock: qty(from), toBlock: qty(from + width - 1) },
    ]);
  });
  const mixed = mixOf(
    [hashes, full, txs, storage, accounts, proofs, logs],
    [0.1, 0.1, 0.2, 0.15, 0.1, 0.15, 0.2],
    n,
    next,
  );
  // The same kind of storage reads at blocks whose state anvil keeps (its last anvilHistory
  // blocks, a block of margin): the one storage mix both servers answer in full, so the two
  // rows compare the same bodies (its own generator: the mixes above stay as they were).
  const recent = new Rng(16);
  const oldest = head - anvilHistory + 2;
  const recentStorage = Array.from({ length: n }, (_, i) => {
    const c = recent.int(CONTRACTS);
    const keys = m.slotKeys[c] as string[];
    return call(
      'storage',
      'eth_getStorageAt',
      [m.contracts[c], keys[recent.int(keys.length)], qty(oldest + recent.int(head - oldest + 1))],
      i,
    );
  });
  return [
    { label: 'eth_getBlockByNumber, random block, hashes', calls: hashes },
    { label: 'eth_getBlockByNumber, random block, full txs', calls: full },
    { label: 'eth_getTransactionByHash, random txs', calls: txs },
    { label: 'eth_getStorageAt, contract slots at random blocks', calls: storage },
    { label: "eth_getStorageAt, contract slots at recent blocks (anvil's state window)", calls: recentStorage },
    { label: 'eth_getProof, fresh accounts at random blocks, no slot', calls: accounts },
    { label: 'eth_getProof, same slot tuples', calls: proofs },
    { label: 'eth_getLogs, one address, 1-100 blocks', calls: logs },
    {
      label: 'mixed (blocks 20%, txs 20%, storage 15%, account proofs 10%, slot proofs 15%, small getLogs 20%)',
      calls: mixed,
    },
  ];
}

export class ScaledChecker {
  readonly freshByAddress: Map<string, { block: number; value: bigint }>;
  readonly contractIndex: Map<string, number>;
  constructor(readonly m: ScaledModel) {
    this.freshByAddress = new Map(m.fresh.map((f) => [f.address, f]));
    this.contractIndex = new Map(m.contracts.map((a, i) => [a, i]));
  }

  private block(n: number): ModelBlock {
    const b = this.m.blocks[n];
    if (b === undefined) throw new Error(`block ${n} not in the model`);
    return b;
  }

  private checkTx(o: Record<string, unknown>, fail: (why: string) => never): void {
    const t = this.m.txs.get(o['hash'] as string);
    if (t === undefined) fail('unknown transaction');
    if (txHashOf(o) !== o['hash']) fail("keccak of the encoding rebuilt from the reply's fields is not its hash");
    if (Number(o['blockNumber']) !== t.block || Number(o['transactionIndex']) !== t.index) fail('tx location');
    if (o['blockHash'] !== this.block(t.block).hash) fail('tx blockHash');
    if (o['from'] !== t.from) fail('tx from');
  }

  async check(c: Call, r: Reply, server: ServerName): Promise<'ok' | 'unsupported'> {
    const fail = (why: string): never => {
      throw new Error(`${server}: ${c.body} -> ${why}: ${JSON.stringify(r).slice(0, 300)}`);
    };
    const stateKind = c.kind === 'storage' || c.kind === 'account' || c.kind === 'proof';
    // anvil (--prune-history) has no state for old blocks; no eth_getProof at any historical block.
    if (
      server === 'anvil' &&
      stateKind &&
      r.error !== undefined &&
      (c.kind === 'proof' || c.kind === 'account' || /BlockOutOfRange/i.test(r.error.message))
    )
      return 'unsupported';
    if (r.error !== undefined || r.result === undefined || r.result === null) fail('no result');
    const res = r.result as Record<string, unknown>;
    switch (c.kind) {
      case 'blockHashes':
      case 'blockFull': {
        const b = this.block(Number(c.params[0]));
        if (Number(res['number']) !== b.number) fail('wrong number');
        if (res['hash'] !== b.hash) fail("not the model's block hash");
        if (headerHash(res) !== b.hash) fail("keccak(RLP(header fields of the reply)) is not the block's hash");
        const txs = res['transactions'] as (string | Record<string, unknown>)[];
        const got = txs.map((t) => (typeof t === 'string' ? t : (t['hash'] as string)));
        if (got.join() !== b.txs.join()) fail('transaction hashes differ from the signed ones');
        if (c.kind === 'blockFull') for (const t of txs) this.checkTx(t as Record<string, unknown>, fail);
        break;
      }
      case 'tx': {
        if (res['hash'] !== c.params[0]) fail('hash');
        this.checkTx(res, fail);
        break;
      }
      case 'storage': {
        const ci = this.contractIndex.get(c.params[0] as string) as number;
        const want = word(storageAt(this.m, ci, c.params[1] as string, Number(c.params[2])));
        if (r.result !== want) fail(`the model says ${want}`);
        break;
      }
      case 'account': {
        const address = c.params[0] as string;
        const f = this.freshByAddress.get(address);
        if (f === undefined) return fail('unknown account');
        const ap = (res['accountProof'] as string[]).map(bytesOf);
        const acct = await verifyMerkleProof(keccak256(bytesOf(address)), ap, {
          root: bytesOf(this.block(Number(c.params[2])).stateRoot),
        }).catch(() => fail('account proof does not verify against the stateRoot'));
        if (acct === null) return fail('account absent from the state');
        const [nonce, balance, storageRoot, codeHash] = (RLP.decode(acct) as Uint8Array[]).map(hexOf);
        if (nonce !== '0x' || balance !== qtyHex(f.value) || storageRoot !== EMPTY_ROOT || codeHash !== EMPTY_CODE)
          fail(`proven account ${nonce} ${balance} ${storageRoot} ${codeHash}: the model has balance ${qty(f.value)}`);
        if (
          res['address'] !== address ||
          res['balance'] !== qty(f.value) ||
          res['nonce'] !== '0x0' ||
          res['storageHash'] !== EMPTY_ROOT ||
          res['codeHash'] !== EMPTY_CODE
        )
          fail('account fields differ from the proven account');
        if (!Array.isArray(res['storageProof']) || (res['storageProof'] as unknown[]).length !== 0)
          fail('storageProof of no slot');
        break;
      }
      case 'proof': {
        const address = c.params[0] as string;
        const slot = (c.params[1] as string[])[0] as string;
        const n = Number(c.params[2]);
        const ci = this.contractIndex.get(address) as number;
        const root = bytesOf(this.block(n).stateRoot);
        const ap = (res['accountProof'] as string[]).map(bytesOf);
        const acct = await verifyMerkleProof(keccak256(bytesOf(address)), ap, { root }).catch(() =>
          fail('account proof does not verify against the stateRoot'),
        );
        if (acct === null) return fail('account absent from the state');
        const [nonce, balance, storageRoot, codeHash] = RLP.decode(acct) as Uint8Array[];
        const num = (b: Uint8Array | undefined): bigint => (b === undefined || b.length === 0 ? 0n : BigInt(hexOf(b)));
        if (hexOf(codeHash as Uint8Array) !== CODE_HASH || res['codeHash'] !== CODE_HASH) fail('codeHash');
        if (num(nonce) !== 1n || res['nonce'] !== qty(num(nonce)) || res['balance'] !== qty(num(balance)))
          fail('account fields');
        if (res['storageHash'] !== hexOf(storageRoot as Uint8Array)) fail('storageHash is not the proven storage root');
        const sp = (res['storageProof'] as { key: string; value: string; proof: string[] }[])[0];
        if (sp === undefined || BigInt(sp.key) !== BigInt(slot)) return fail('storage proof key');
        // An empty storage trie (the contract not written yet): nothing to walk; geth proves with
        // [], anvil with ["0x80"] (the RLP of the empty root node).
        const empty = hexOf(storageRoot as Uint8Array) === EMPTY_ROOT;
        if (empty && !(sp.proof.length === 0 || (sp.proof.length === 1 && sp.proof[0] === '0x80')))
          fail('proof into an empty storage trie');
        const v = empty
          ? null
          : await verifyMerkleProof(keccak256(bytesOf(slot)), sp.proof.map(bytesOf), {
              root: storageRoot as Uint8Array,
            }).catch(() => fail('storage proof does not verify'));
        const proven = v === null ? 0n : num(RLP.decode(v) as Uint8Array);
        const want = storageAt(this.m, ci, slot, n);
        if (proven !== want || BigInt(sp.value) !== want || sp.value !== qty(want))
          fail(`storage proof value: the model says ${qty(want)}`);
        break;
      }
      case 'logs': {
        const logs = r.result as Record<string, unknown>[];
        if (!Array.isArray(logs)) return fail('not an array');
        const q = c.params[0] as { address: string; fromBlock: string; toBlock: string };
        const want: Record<string, unknown>[] = [];
        for (let b = Number(q.fromBlock); b <= Number(q.toBlock); b++) {
          const blk = this.block(b);
          for (const l of this.m.logs[b] ?? []) {
            if (l.address !== q.address) continue;
            want.push({
              address: l.address,
              topics: [EVENT, l.slot],
              data: l.value,
              blockNumber: qty(b),
              blockHash: blk.hash,
              transactionHash: l.txHash,
              transactionIndex: qty(l.txIndex),
              logIndex: qty(l.logIndex),
              removed: false,
            });
          }
        }
        if (logs.length !== want.length) fail(`${logs.length} logs, the model has ${want.length}`);
        logs.forEach((l, i) => {
          const w = want[i] as Record<string, unknown>;
          for (const k of Object.keys(w))
            if (JSON.stringify(l[k]) !== JSON.stringify(w[k]))
              fail(`log ${i}: ${k} is ${JSON.stringify(l[k])}, the model has ${JSON.stringify(w[k])}`);
        });
        break;
      }
    }
    return 'ok';
  }
}

/**
 * anvil's deviations from geth normalised before the two servers' replies are compared:
 * - block `size`: anvil leaves the empty withdrawals list out of the block's RLP; geth counts it
 *   (packages/cli/test/follow-anvil.test.ts checks chainnode's against the geth rule).
 */
/** JSON with object keys sorted (key order is not part of the answer). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

function normaliseScaled(c: Call, r: Reply): string | undefined {
  if (c.kind === 'proof') return undefined; // anvil answers no historical proof
  const res = r.result;
  if ((c.kind === 'blockHashes' || c.kind === 'blockFull') && res !== null && typeof res === 'object') {
    const { size: _size, ...rest } = res as Record<string, unknown>;
    return canonical(rest);
  }
  return canonical(res);
}

/** The scaled chain: built by anvil in the run (or reused from --keep), imported by chainnode. */
export const scaledBuilder: ChainBuilder<Omit<ScaledOptions, 'dir' | 'log'>> = {
  name: 'scaled',
  build: (o, dir, log) => prepareScaled({ ...o, dir, log }),
};

async function prepareScaled(o: ScaledOptions): Promise<ChainUnderTest> {
  mkdirSync(o.dir, { recursive: true });
  const modelPath = join(o.dir, 'model.json');
  if (o.keep === true && existsSync(modelPath)) {
    if (!o.noAnvil) throw new Error(`--keep ${o.dir}: reusing a kept chain needs --no-anvil (anvil is not kept)`);
    o.log(`scaled: reusing the chain kept in ${o.dir}`);
    return scaledUnderTest(o, loadModel(modelPath), join(o.dir, 'data'), 0, undefined, undefined);
  }
  const genesisPath = join(o.dir, 'genesis.json');
  writeFileSync(genesisPath, JSON.stringify(scaledGenesis(senderWallets().map((w) => w.address.toLowerCase()))));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const anvilUrl = `http://127.0.0.1:${port}`;
  const args = [...anvilArgs(genesisPath, port, join(o.dir, 'anvil-cache')), '--prune-history', String(o.anvilHistory)];
  const anvil = spawnChild(join(o.root, 'node_modules', '.bin', 'anvil'), args, {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitRpc(anvilUrl, anvil);
  const datadir = join(o.dir, 'data');
  // chainnode imports while anvil builds (the two share the 2 cores): `sync --to <built head>` in
  // chunks, then the rest once the build is done.
  let built = 0;
  let imported = 0;
  let syncing: Promise<void> | undefined;
  const t0 = Date.now();
  const syncTo = async (to: number): Promise<void> => {
    // --genesis only for the first chunk: a datadir whose block 0 is anvil's (its --init block 0
    // carries the empty-trie state root, which the import stores) refuses the same genesis.json
    // on resume ("holds a chain with genesis <anvil's>, but the given genesis.json has <geth's>").
    const genesisArg = imported === 0 ? ['--genesis', genesisPath] : [];
    const out = await runChild(
      process.execPath,
      [o.cli, 'sync', '--from', anvilUrl, ...genesisArg, '--datadir', datadir, '--to', String(to)],
      () => {},
    );
    imported = to;
    o.log(
      `scaled: chainnode imported to block ${to} (${((Date.now() - t0) / 1000).toFixed(0)} s since the build started)${/datadir .* is (.*) on disk/.exec(out)?.[1] !== undefined ? `, datadir ${/datadir .* is (.*) on disk/.exec(out)?.[1]}` : ''}`,
    );
  };
  let syncErr: unknown;
  const kick = (): void => {
    if (syncing !== undefined || built - imported < 400) return;
    syncing = syncTo(built)
      .catch((e: unknown) => {
        syncErr = e;
      })
      .finally(() => {
        syncing = undefined;
      });
  };
  const model = await buildScaledChain(anvilUrl, o.dir, o.blocks, o.log, (n) => {
    built = n;
    if (syncErr !== undefined) throw syncErr;
    kick();
  });
  const tb = Date.now();
  while (syncing !== undefined) await syncing;
  if (syncErr !== undefined) throw syncErr;
  if (imported < o.blocks) await syncTo(o.blocks);
  o.log(
    `scaled: built in ${((tb - t0) / 1000).toFixed(0)} s; chainnode's import done ${((Date.now() - tb) / 1000).toFixed(0)} s after the build (total ${((Date.now() - t0) / 1000).toFixed(0)} s)`,
  );
  // anvil's memory after the build (launcher + binary: its process group).
  const rssKb = (await runChild('ps', ['-o', 'rss=', '-g', String(anvil.pid)]).catch(() => ''))
    .split(/\s+/)
    .filter((x) => x !== '')
    .reduce((a, x) => a + Number(x), 0);
  o.log(`scaled: anvil RSS ${(rssKb / 1024).toFixed(0)} MB after the build (--prune-history ${o.anvilHistory})`);
  if (o.noAnvil) await stopChild(anvil);
  if (o.keep === true) saveModel(modelPath, model);
  return scaledUnderTest(o, model, datadir, rssKb, anvil, anvilUrl);
}

function scaledUnderTest(
  o: ScaledOptions,
  model: ScaledModel,
  datadir: string,
  rssKb: number,
  anvil: ChildProcess | undefined,
  anvilUrl: string | undefined,
): ChainUnderTest {
  const checker = new ScaledChecker(model);
  const c = model.counts;
  return {
    describe:
      anvil === undefined && rssKb === 0
        ? `scaled, kept in ${o.dir} by an earlier --keep run (its anvil is not kept): ${c.blocks} blocks, ${c.txs} txs, ${c.accounts} accounts, ${c.slots} contract slots, ${c.logs} logs`
        : `scaled, built by anvil in this run: ${c.blocks} blocks, ${c.txs} txs, ${c.accounts} accounts, ${c.slots} contract slots, ${c.logs} logs; anvil --prune-history ${o.anvilHistory} (state of its last ${o.anvilHistory} blocks), RSS ${(rssKb / 1024).toFixed(0)} MB after the build`,
    mixes: buildMixes(model, o.bodies, o.logBodies, o.anvilHistory),
    datadir,
    anvilUrl: o.noAnvil || anvil === undefined ? undefined : anvilUrl,
    ...(!o.noAnvil && anvil?.pid !== undefined ? { anvilPgid: anvil.pid } : {}),
    check: (call, r, server) => checker.check(call, r, server),
    // anvil's window, with a block of margin.
    anvilSkips: (calls) => anvilWindowSkips(calls, o.blocks - o.anvilHistory + 2, o.anvilProofSample),
    normalise: (call, r) => normaliseScaled(call, r),
    close: () => (anvil === undefined ? Promise.resolve() : stopChild(anvil)),
  };
}
