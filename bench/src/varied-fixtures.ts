// `--chain fixtures`: the varied bench on the bundled fixture chain (1,600 blocks), imported into
// chainnode from chain.rlp, and the same transactions replayed into anvil block by block
// (bench/src/fixture-chain.ts): same transactions, contracts, storage and logs at the same numbers,
// other block hashes (anvil writes its own headers). Replies are checked against answers computed
// here from chain.rlp: block hashes = keccak(header RLP), tx hashes = keccak(tx bytes), tx locations
// from the export's order, the account proof's root node hashing to the export's state root; and the
// values two independent EVMs (this node's ethereumjs-executed import, anvil's revm) must agree on
// (storage words, logs, tx lists) are compared between the servers by the runner (normalise below).
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runChild, stopChild } from './children.js';
import { readChain, startReplayedAnvil } from './fixture-chain.js';
import type { FixtureBlock } from './fixture-chain.js';
import { anvilWindowSkips, callMaker, qty } from './varied-mix.js';
import type { Call, ChainBuilder, ChainUnderTest, Mix, Reply, ServerName } from './varied-mix.js';
import type { Manifest } from './mainnet-shape/generator.js';
import { Rng, keccak256 } from './synth.js';
import type { ChildProcess } from 'node:child_process';

const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const EMITTER = '0xac71dc6244075b8763fac5367375306e747c761a';
const REGISTRY = '0xc3e03991e5e0bd4a705887a58bb2d3fa2538c0c7';

/** The contracts the mixes ask about: storage tuples, busy log emitters, rare emitters. */
export interface ChainContracts {
  storage: string[];
  busy: string[];
  rare: string[];
  /** The widest getLogs range of the log mix, in blocks (default 100). */
  logRange?: number;
}
const word = (n: number): string => `0x${n.toString(16).padStart(64, '0')}`;

function buildMixes(chain: FixtureBlock[], contracts: ChainContracts, n: number): Mix[] {
  const rng = new Rng(15);
  const head = chain.length;
  const allTxs = chain.flatMap((b) => b.txs);
  const call = callMaker();
  const blockNo = (): number => 1 + rng.int(head);
  // Storage tuples (contract, slot, block), shared by the storage and proof mixes.
  const tuples = Array.from({ length: n }, () => ({
    address: contracts.storage[rng.int(contracts.storage.length)] as string,
    slot: rng.int(8),
    block: blockNo(),
  }));
  const hashes: Call[] = Array.from({ length: n }, () =>
    call('blockHashes', 'eth_getBlockByNumber', [qty(blockNo()), false]),
  );
  const full: Call[] = Array.from({ length: n }, () =>
    call('blockFull', 'eth_getBlockByNumber', [qty(blockNo()), true]),
  );
  const txs: Call[] = Array.from({ length: n }, (_, i) =>
    call('tx', 'eth_getTransactionByHash', [
      (allTxs[i < allTxs.length ? i : rng.int(allTxs.length)] as { hash: string }).hash,
    ]),
  );
  // Every transaction once, in random order.
  for (let i = txs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [txs[i], txs[j]] = [txs[j] as Call, txs[i] as Call];
  }
  const storage = tuples.map((t, i) => call('storage', 'eth_getStorageAt', [t.address, word(t.slot), qty(t.block)], i));
  const proofs = tuples.map((t, i) => call('proof', 'eth_getProof', [t.address, [word(t.slot)], qty(t.block)], i));
  const logRange = contracts.logRange ?? 100;
  const addresses = [...contracts.busy, ...contracts.rare];
  const busy = contracts.busy.length;
  const logs: Call[] = Array.from({ length: n }, () => {
    const width = 1 + rng.int(Math.min(logRange, head));
    const from = 1 + rng.int(head - width + 1);
    // Mostly the two busy contracts (real traffic), a quarter rare emitters.
    const address =
      rng.next() < 0.75
        ? (addresses[rng.int(busy)] as string)
        : (addresses[busy + rng.int(addresses.length - busy)] as string);
    return call('logs', 'eth_getLogs', [{ address, fromBlock: qty(from), toBlock: qty(from + width - 1) }]);
  });
  // The mixed workload: a fifth each of blocks (half full), txs, storage, proofs, small getLogs.
  const mixed: Call[] = [];
  const pools = [hashes, full, txs, storage, proofs, logs];
  const weights = [0.1, 0.1, 0.2, 0.2, 0.2, 0.2];
  for (let i = 0; i < n; i++) {
    let r = rng.next();
    let k = 0;
    while (k < weights.length - 1 && r >= (weights[k] as number)) r -= weights[k++] as number;
    const pool = pools[k] as Call[];
    mixed.push(pool[rng.int(pool.length)] as Call);
  }
  return [
    { label: 'eth_getBlockByNumber, random block, hashes', calls: hashes },
    { label: 'eth_getBlockByNumber, random block, full txs', calls: full },
    { label: 'eth_getTransactionByHash, every tx', calls: txs },
    { label: 'eth_getStorageAt, contract slots at random blocks', calls: storage },
    { label: 'eth_getProof, same tuples, one slot', calls: proofs },
    { label: `eth_getLogs, one address, 1-${logRange} blocks`, calls: logs },
    { label: 'mixed (blocks 20%, txs, storage, proofs, small getLogs 20% each)', calls: mixed },
  ];
}

class Checker {
  readonly byNumber = new Map<number, FixtureBlock>();
  readonly txLoc = new Map<string, { block: FixtureBlock; index: number }>();
  constructor(chain: FixtureBlock[]) {
    for (const b of chain) {
      this.byNumber.set(b.number, b);
      b.txs.forEach((t, i) => {
        this.txLoc.set(t.hash, { block: b, index: i });
      });
    }
  }

  /** Throws unless `r` is the right answer to `c` (`ours`: this node, whose block hashes are the export's). */
  check(c: Call, r: Reply, ours: boolean): void {
    const fail = (why: string): never => {
      throw new Error(`${ours ? 'chainnode' : 'anvil'}: ${c.body} -> ${why}: ${JSON.stringify(r).slice(0, 300)}`);
    };
    if (r.error !== undefined || r.result === undefined || r.result === null) fail('no result');
    const res = r.result as Record<string, unknown>;
    switch (c.kind) {
      case 'blockHashes':
      case 'blockFull': {
        const b = this.byNumber.get(Number(c.params[0])) as FixtureBlock;
        if (Number(res['number']) !== b.number) fail('wrong number');
        if (ours && res['hash'] !== b.hash) fail('block hash is not keccak(header)');
        const txs = res['transactions'] as (string | Record<string, unknown>)[];
        const got = txs.map((t) => (typeof t === 'string' ? t : (t['hash'] as string)));
        if (got.join() !== b.txs.map((t) => t.hash).join()) fail('transaction hashes differ from the export');
        if (c.kind === 'blockFull') {
          txs.forEach((t, i) => {
            const o = t as Record<string, unknown>;
            if (Number(o['blockNumber']) !== b.number || Number(o['transactionIndex']) !== i) fail('tx location');
            if (ours && o['blockHash'] !== b.hash) fail('tx blockHash');
          });
        }
        break;
      }
      case 'tx': {
        const loc = this.txLoc.get(c.params[0] as string);
        if (loc === undefined) {
          fail('unknown tx');
          return;
        }
        if (res['hash'] !== c.params[0]) fail('hash');
        if (Number(res['blockNumber']) !== loc.block.number || Number(res['transactionIndex']) !== loc.index)
          fail('location');
        if (ours && res['blockHash'] !== loc.block.hash) fail('blockHash');
        break;
      }
      case 'storage': {
        if (typeof r.result !== 'string' || !/^0x[0-9a-f]{64}$/.test(r.result)) fail('not a word');
        break;
      }
      case 'proof': {
        const b = this.byNumber.get(Number(c.params[2])) as FixtureBlock;
        const ap = res['accountProof'] as string[];
        const root = `0x${Buffer.from(keccak256(Buffer.from((ap[0] as string).slice(2), 'hex'))).toString('hex')}`;
        if (ours && root !== b.stateRoot) fail("account proof root is not the export's state root");
        if (!Array.isArray(res['storageProof']) || (res['storageProof'] as unknown[]).length !== 1)
          fail('storageProof');
        break;
      }
      case 'logs': {
        const logs = r.result as Record<string, unknown>[];
        if (!Array.isArray(logs)) {
          fail('not an array');
          return;
        }
        const [from, to] = [
          Number((c.params[0] as { fromBlock: string }).fromBlock),
          Number((c.params[0] as { toBlock: string }).toBlock),
        ];
        for (const l of logs) {
          const n = Number(l['blockNumber']);
          if (n < from || n > to || l['address'] !== (c.params[0] as { address: string }).address)
            fail('log outside the filter');
          const loc = this.txLoc.get(l['transactionHash'] as string);
          if (loc === undefined || loc.block.number !== n || Number(l['transactionIndex']) !== loc.index)
            fail('log tx location');
          if (ours && l['blockHash'] !== (loc as { block: FixtureBlock }).block.hash) fail('log blockHash');
        }
        break;
      }
    }
  }
}

/** What both EVMs must agree on (block hashes differ: anvil writes its own headers). */
function normaliseFixture(c: Call, r: Reply): string | undefined {
  const res = r.result as Record<string, unknown>;
  switch (c.kind) {
    case 'storage':
      return JSON.stringify(r.result);
    case 'blockHashes':
    case 'blockFull':
      return (res['transactions'] as (string | Record<string, unknown>)[])
        .map((t) => (typeof t === 'string' ? t : (t['hash'] as string)))
        .join();
    case 'tx':
      return [res['hash'], res['blockNumber'], res['transactionIndex'], res['from'], res['input']].join('|');
    case 'logs':
      return (r.result as Record<string, unknown>[])
        .map((x) =>
          [
            x['blockNumber'],
            x['transactionHash'],
            x['logIndex'],
            x['address'],
            (x['topics'] as string[]).join(),
            x['data'],
          ].join('|'),
        )
        .join('\n');
    default:
      return undefined;
  }
}

export interface FixtureOptions {
  root: string;
  /** Another export than fixtures/ (genesis.json, chain.rlp), with the contracts to ask about. */
  export?: { dir: string; contracts: ChainContracts; label: string };
  cli: string;
  dir: string;
  /** An imported copy of the fixtures (else imported into dir). */
  datadir?: string;
  bodies: number;
  noAnvil: boolean;
  /**
   * States anvil keeps (its --prune-history; undefined: all of them). On the 2,000-block
   * mainnet-shaped chain anvil with every state wrote 59 GB to its cache and was killed out of
   * memory at 22.5 GB of RSS by eth_getStorageAt at random blocks, so that chain runs with a window.
   */
  anvilHistory?: number;
  /** eth_getProof bodies sent to anvil per mix, at most (with anvilHistory). */
  anvilProofSample?: number;
  log: (line: string) => void;
}

/** The fixture chain (or another export): imported by chainnode, its transactions replayed into anvil. */
export const fixtureBuilder: ChainBuilder<Omit<FixtureOptions, 'dir' | 'log'>> = {
  name: 'fixtures',
  build: (o, dir, log) => prepareFixtures({ ...o, dir, log }),
};

/** The mainnet-shaped export written by `npm run bench:chain` (`from`), as a fixture chain with its contracts. */
export const mainnetBuilder: ChainBuilder<Omit<FixtureOptions, 'dir' | 'log' | 'export'> & { from?: string }> = {
  name: 'mainnet',
  build: ({ from, ...o }, dir, log) => prepareFixtures({ ...o, export: mainnetExport(from), dir, log }),
};

/** The mainnet-shaped export's contracts: pools and hot tokens for storage, hot tokens and pools busy, the tail rare. */
function mainnetExport(from: string | undefined): NonNullable<FixtureOptions['export']> {
  if (from === undefined) throw new Error('--chain mainnet needs --from <dir written by npm run bench:chain>');
  const m = JSON.parse(readFileSync(join(from, 'manifest.json'), 'utf8')) as Manifest;
  const a = m.addresses;
  const hot = a.tokens.slice(0, a.hotTokens);
  return {
    dir: from,
    label: `mainnet-shaped (${m.stats.blocks} blocks)`,
    contracts: {
      storage: [...a.pairs.slice(0, 3).map((p) => p.address), ...hot],
      busy: [...hot, a.pairs[0]?.address as string, a.nfts[0] as string],
      rare: [...a.tokens.slice(a.hotTokens), ...a.nfts.slice(a.hotNfts)],
      // The hottest token logs ~138 times a block: over 100 blocks that passes the 10,000-result cap
      // (geth's and Infura's too), whose error is no log answer to compare. 65 blocks is the widest
      // range under it on the 2,000-block chain (bench/cold.ts).
      logRange: 50,
    },
  };
}

async function prepareFixtures(o: FixtureOptions): Promise<ChainUnderTest> {
  const fixtures = o.export?.dir ?? join(o.root, 'fixtures');
  const chain = readChain(join(fixtures, 'chain.rlp'));
  const contracts: ChainContracts = o.export?.contracts ?? {
    storage: [TOKEN, EMITTER, REGISTRY],
    busy: [TOKEN, EMITTER],
    rare: [
      ...readFileSync(join(fixtures, 'README.md'), 'utf8').matchAll(/^\| \d+ \| `(0x[0-9a-f]{40})` \| \d+ \|$/gm),
    ].map((m) => m[1] as string),
  };
  let datadir = o.datadir;
  if (datadir === undefined) {
    mkdirSync(o.dir, { recursive: true });
    datadir = join(o.dir, 'data');
    o.log(`varied: importing ${fixtures} into ${datadir}`);
    await runChild(process.execPath, [o.cli, 'sync', '--from', fixtures, '--datadir', datadir], () => {});
  }
  let anvil: ChildProcess | undefined;
  let anvilUrl: string | undefined;
  if (!o.noAnvil) {
    const started = await startReplayedAnvil({
      root: o.root,
      genesisPath: join(fixtures, 'genesis.json'),
      cacheDir: join(o.dir, 'anvil-cache'),
      history: o.anvilHistory,
      blocks: chain,
      log: (line) => o.log(`varied: ${line}`),
    });
    anvil = started.proc;
    anvilUrl = started.url;
  }
  const checker = new Checker(chain);
  const txCount = chain.reduce((s, b) => s + b.txs.length, 0);
  const head = chain.at(-1)?.number ?? 0;
  const history = o.anvilHistory;
  const window = history === undefined ? '' : `, --prune-history ${history}`;
  return {
    describe: `${o.export?.label ?? 'fixtures'}, ${chain.length} blocks, ${txCount} txs; anvil 1.7.1 on the same transactions replayed${window}`,
    ...(history !== undefined
      ? {
          // anvil's window, with a block of margin.
          anvilSkips: (calls: Call[]) =>
            anvilWindowSkips(calls, head - history + 2, o.anvilProofSample ?? Number.POSITIVE_INFINITY),
        }
      : {}),
    mixes: buildMixes(chain, contracts, o.bodies),
    datadir,
    anvilUrl,
    ...(anvil?.pid !== undefined ? { anvilPgid: anvil.pid } : {}),
    check: async (c: Call, r: Reply, server: ServerName) => {
      if (server === 'anvil' && r.error !== undefined && c.kind === 'proof') return 'unsupported';
      checker.check(c, r, server === 'chainnode');
      return 'ok';
    },
    normalise: (c, r) => normaliseFixture(c, r),
    close: async () => {
      if (anvil !== undefined) await stopChild(anvil);
    },
  };
}
