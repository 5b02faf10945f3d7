// State on demand, proven: a ChainStore whose state reads (accounts, storage, proofs, code) that
// reach a trie node the store does not hold (a node that joined its chain at block N holds no state
// of its own) fetch eth_getProof from an upstream for exactly the account and slots asked, verify it
// against the node's OWN stored state root of the block (proof-walk.ts: the store's synchronous
// walk over the proof's nodes, each taken only by the hash its parent names), store the nodes the
// walk read (content-addressed: they slot into the archive trie) and answer from a local walk,
// which finds them in the store's cache at once: the write to disk is not waited for (a crash
// before it loses nothing but the proof, which is fetched again). So:
// - a second query over the same paths reads no upstream (the nodes are local now);
// - a proof that does not verify, or whose stated account or slot values differ from what it
//   proves, is never stored or served: the call fails with UnprovenStateError;
// - concurrent misses for the same (state, account, slots) fetch once (SingleFlight);
// - what is asked of an upstream in one turn goes out in one request (upstream-batch.ts): the paths
//   an execution missed, cold reads that arrive together.
// Code is fetched with eth_getCode and kept only if its keccak is the proven account's code hash.
// Everything else passes through to the wrapped store.
import { RLP } from '@ethereumjs/rlp';
import { Lru, keccak256 } from '@chainnode/core';
import {
  MissingTrieNodeError,
  ServerError,
  SingleFlight,
  UpstreamError,
  bytesEqual,
  bytesToBigInt,
} from '@chainnode/core';
import type { AccountRecord, Bytes, ChainStore, SyncStateReader, UpstreamClient } from '@chainnode/core';
import { ProvenNodes, provenValue } from './proof-walk.js';
import { UpstreamBatcher } from './upstream-batch.js';

const EMPTY_TRIE = hexBytes('0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421');
const EMPTY_CODE = hexBytes('0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');

function hexBytes(h: string): Uint8Array {
  return Uint8Array.from(Buffer.from(h.slice(2), 'hex'));
}
const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;

/** A proof (or code) from the upstream that does not verify: never stored, never served. */
export class UnprovenStateError extends ServerError {
  constructor(
    readonly origin: string,
    reason: string,
  ) {
    super(
      `state not proven: ${origin} answered a proof that does not verify against this node's state root (${reason})`,
    );
  }
}

/** Counts by upstream origin, for the metrics. */
export interface ProvenStateStats {
  /** eth_getProof / eth_getCode calls made. */
  fetches: number;
  /** Answers that verified and were stored. */
  verified: number;
  /** Answers that did not verify (the upstream lied or is broken). */
  rejected: number;
  /** Calls that failed (no answer, an error, not JSON). */
  failed: number;
  /** Reads answered after a fetch (cold) . */
  cold: number;
}

export interface ProvenStateOptions {
  upstream: UpstreamClient;
  /** Called on each rejected proof (the metrics mark the upstream). */
  onRejected?: (origin: string, reason: string) => void;
  /**
   * State at blocks below the first block a joined datadir holds (their headers verified by the
   * store's history layer): proofs and code from this upstream instead (--history-upstream).
   */
  history?: { upstream: UpstreamClient; firstBlock: () => bigint };
}

/** Which block a state root belongs to, so the upstream is asked about that block. */
type BlockRef = { hash: Uint8Array; number?: bigint } | { number: bigint };

const MAX_ATTEMPTS = 3;
const REMEMBERED = 4096;

/** The state layer around `store` (see the file comment). */
export class ProvenState {
  readonly stats: ProvenStateStats = { fetches: 0, verified: 0, rejected: 0, failed: 0, cold: 0 };
  private readonly blocks = new Lru<string, BlockRef>(REMEMBERED);
  /** codeHash -> the account and state it was read in (eth_getCode reads the account first). */
  private readonly codeOwners = new Lru<string, { address: Uint8Array; root: Uint8Array }>(REMEMBERED);
  private readonly flights = new SingleFlight<string, void>();
  /** storageRoot -> the account and state it was read in (the synchronous reader's storage reads). */
  private readonly storageOwners = new Lru<string, { address: Uint8Array; root: Uint8Array }>(REMEMBERED);
  /** What synchronous reads missed since the last fetchMissed: (root, address) -> slots. */
  private missed = new Map<string, { root: Uint8Array; address: Uint8Array; slots: Map<string, Uint8Array> }>();
  private missedCode = new Set<string>();
  private reader!: SyncStateReader;
  /** Nodes of recent proofs: the top of a block's state trie is hashed once, not once per proof. */
  private readonly provenNodes = new ProvenNodes();
  private readonly batcher = new UpstreamBatcher();
  readonly store: ChainStore;

  constructor(
    private readonly inner: ChainStore,
    private readonly opts: ProvenStateOptions,
  ) {
    if (inner.addProvenState === undefined) throw new Error('proven state: the store cannot take proven nodes');
    this.store = this.wrap();
    this.reader = this.syncReader(inner.stateReader());
  }

  /**
   * The store's synchronous reads (an EVM's), recording what they miss: an execution cannot wait
   * for a proof, so it fails on the missing node, the caller fetches the recorded paths
   * (fetchMissed) and runs again.
   */
  private syncReader(r: SyncStateReader): SyncStateReader {
    const inner = this.inner;
    const miss = (root: Uint8Array, address: Uint8Array, slot?: Uint8Array): void => {
      const k = `${hex(root)}:${hex(address)}`;
      let m = this.missed.get(k);
      if (m === undefined) this.missed.set(k, (m = { root: root.slice(), address: address.slice(), slots: new Map() }));
      if (slot !== undefined) m.slots.set(hex(slot), slot.slice());
    };
    return {
      account: (root, address) => {
        try {
          const a = r.account(root, address);
          if (a !== null) {
            this.storageOwners.set(hex(a.storageRoot), { address: address.slice(), root: root.slice() });
            this.codeOwners.set(hex(a.codeHash), { address: address.slice(), root: root.slice() });
          }
          return a;
        } catch (err) {
          if (err instanceof MissingTrieNodeError) miss(root, address);
          throw err;
        }
      },
      storage: (storageRoot, slot) => {
        try {
          return r.storage(storageRoot, slot);
        } catch (err) {
          const owner = this.storageOwners.get(hex(storageRoot));
          if (err instanceof MissingTrieNodeError && owner !== undefined) miss(owner.root, owner.address, pad32(slot));
          throw err;
        }
      },
      code: (codeHash) => {
        const c = r.code(codeHash);
        if (c === undefined && this.codeOwners.get(hex(codeHash)) !== undefined) {
          this.missedCode.add(hex(codeHash));
          throw new MissingTrieNodeError(codeHash);
        }
        return c;
      },
      // Trie nodes (what eth_simulateV1 computes its blocks' state roots over) only from a store
      // that holds its whole state, one that followed its chain from block 0: a joined store's trie
      // is partial, so it serves none and simulation is refused there. Asked at each read: the
      // datadir may be initialized after this wrapper is made.
      get node() {
        const node = r.node;
        return node !== undefined && (inner.info().firstBlock ?? 0n) === 0n ? node.bind(r) : undefined;
      },
    };
  }

  /** Fetches and proves what the synchronous reads missed (ChainStore.fetchMissedState). */
  private async fetchMissed(): Promise<boolean> {
    const paths = [...this.missed.values()];
    const codes = [...this.missedCode];
    this.missed = new Map();
    this.missedCode = new Set();
    await Promise.all([
      ...paths.map((p) => {
        const slots = [...p.slots.values()];
        const key = `${hex(p.root)}:${hex(p.address)}:${slots.map(hex).sort().join(',')}`;
        return this.flights.run(key, () => this.fetchProof(p.root, p.address, slots));
      }),
      ...codes.map((h) => this.code(hexBytes(h))),
    ]);
    return paths.length + codes.length > 0;
  }

  /**
   * ChainStore.prefetchState: of `paths`, what the local reads lack, proven together (one
   * request); the code of `codeOf` asked alongside when its account is fetched, kept once the
   * proven account's code hash matches it.
   */
  private async prefetch(root: Bytes, paths: { address: Bytes; slots: Bytes[] }[], codeOf?: Bytes): Promise<void> {
    const ref = this.blocks.get(hex(root));
    if (ref === undefined) return; // a root no header read named: the runs fetch what they miss
    const fetches: Promise<void>[] = [];
    let code: Promise<unknown> | undefined;
    for (const p of paths) {
      const slots = this.locallyMissing(root, p.address, p.slots);
      if (slots === undefined) continue;
      const key = `${hex(root)}:${hex(p.address)}:${slots.map(hex).sort().join(',')}`;
      fetches.push(this.flights.run(key, () => this.fetchProof(root, p.address, slots)));
      if (codeOf !== undefined && bytesEqual(codeOf, p.address) && code === undefined) {
        const block = 'hash' in ref ? { blockHash: hex(ref.hash) } : `0x${ref.number.toString(16)}`;
        code = this.upstreamCall(this.upstreamFor(ref), 'eth_getCode', [hex(codeOf), block]).catch(() => undefined);
      }
    }
    await Promise.all(fetches);
    if (code !== undefined) this.keepPrefetchedCode(root, codeOf as Bytes, await code);
  }

  /** The slots of `address` the local reads cannot give (all of `slots` when the account is missing); undefined: none. */
  private locallyMissing(root: Bytes, address: Bytes, slots: Bytes[]): Bytes[] | undefined {
    const r = this.inner.stateReader();
    const missing = (err: unknown): boolean => {
      if (err instanceof MissingTrieNodeError) return true;
      throw err;
    };
    let account: AccountRecord | null;
    try {
      account = r.account(root, address);
    } catch (err) {
      missing(err);
      return slots;
    }
    if (account === null) return undefined;
    const out = slots.filter((slot) => {
      try {
        r.storage(account.storageRoot, pad32(slot));
        return false;
      } catch (err) {
        return missing(err);
      }
    });
    return out.length > 0 ? out : undefined;
  }

  /** eth_getCode of `address` asked alongside its proof: kept when it hashes to the proven code hash. */
  private keepPrefetchedCode(root: Bytes, address: Bytes, reply: unknown): void {
    let account: AccountRecord | null;
    try {
      account = this.inner.stateReader().account(root, address);
    } catch {
      return;
    }
    if (account === null || bytesEqual(account.codeHash, EMPTY_CODE) || typeof reply !== 'string') return;
    if (!/^0x([0-9a-fA-F]{2})*$/.test(reply)) return;
    const code = hexBytes(reply);
    // Not the proven code: not kept (the run asks for it and refuses it then).
    if (bytesEqual(keccak256(code), account.codeHash)) this.keep([], [code]);
  }

  private wrap(): ChainStore {
    const inner = this.inner;
    const overrides: Partial<ChainStore> = {
      // eth_call and its relatives take the state root from the header.
      header: async (hash) => {
        const h = await inner.header(hash);
        if (h !== undefined) this.blocks.set(hex(h.stateRoot), { hash: h.hash, number: h.number });
        return h;
      },
      stateRoot: async (hash) => {
        const root =
          inner.stateRoot !== undefined ? await inner.stateRoot(hash) : (await inner.header(hash))?.stateRoot;
        if (root !== undefined) {
          // With a history upstream the number picks the upstream asked (below the first block or not).
          const number = this.opts.history !== undefined ? await inner.blockNumber(hash) : undefined;
          this.blocks.set(hex(root), number !== undefined ? { hash, number } : { hash });
        }
        return root;
      },
      canonicalStateRoot: async (number) => {
        let root: Bytes | undefined;
        if (inner.canonicalStateRoot !== undefined) root = await inner.canonicalStateRoot(number);
        else {
          const hash = await inner.canonicalHash(number);
          root = hash === undefined ? undefined : (await inner.header(hash))?.stateRoot;
        }
        if (root !== undefined && this.blocks.get(hex(root)) === undefined) this.blocks.set(hex(root), { number });
        return root;
      },
      account: (root, address) =>
        this.proven(root, address, [], async () => {
          const a = await inner.account(root, address);
          if (a !== null) this.codeOwners.set(hex(a.codeHash), { address, root });
          return a;
        }),
      storageAt: (root, address, slot) =>
        this.proven(root, address, [slot], () => inner.storageAt(root, address, slot)),
      proof: (root, address, slots) => this.proven(root, address, slots, () => inner.proof(root, address, slots)),
      code: (codeHash) => this.code(codeHash),
      stateReader: () => this.reader,
      fetchMissedState: () => this.fetchMissed(),
      prefetchState: (root, paths, codeOf) => this.prefetch(root, paths, codeOf),
    };
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && prop in overrides) return overrides[prop as keyof ChainStore];
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }

  /** Runs `read`; on a missing trie node fetches and verifies the path, then reads again (locally). */
  private async proven<T>(root: Bytes, address: Bytes, slots: Bytes[], read: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const v = await read();
        if (attempt > 1) this.stats.cold++;
        return v;
      } catch (err) {
        if (!(err instanceof MissingTrieNodeError)) throw err;
        if (attempt >= MAX_ATTEMPTS)
          throw new ServerError(
            `missing trie node: the proof from ${this.opts.upstream.origin} did not cover the path`,
          );
        const key = `${hex(root)}:${hex(address)}:${slots.map(hex).sort().join(',')}`;
        await this.flights.run(key, () => this.fetchProof(root, address, slots));
      }
    }
  }

  private blockOf(root: Bytes): BlockRef {
    const b = this.blocks.get(hex(root));
    if (b === undefined) throw new ServerError(`missing trie node: no block known for state root ${hex(root)}`);
    return b;
  }

  /** The upstream asked about a block: the history upstream below the first block, else the followed one. */
  private upstreamFor(ref: BlockRef): UpstreamClient {
    const h = this.opts.history;
    return h !== undefined && ref.number !== undefined && ref.number < h.firstBlock() ? h.upstream : this.opts.upstream;
  }

  private async upstreamCall(upstream: UpstreamClient, method: string, params: unknown[]): Promise<unknown> {
    this.stats.fetches++;
    try {
      return await this.batcher.call(upstream, method, params);
    } catch (err) {
      this.stats.failed++;
      if (err instanceof UpstreamError)
        throw new ServerError(`missing trie node: state is fetched on demand and the upstream failed: ${err.message}`);
      throw err;
    }
  }

  /** Refuses what `upstream` answered: counted, reported, never stored or served. */
  private rejecter(upstream: UpstreamClient): (reason: string) => never {
    return (reason) => this.refuse(upstream.origin, reason);
  }

  private refuse(origin: string, reason: string): never {
    this.stats.rejected++;
    this.opts.onRejected?.(origin, reason);
    throw new UnprovenStateError(origin, reason);
  }

  /** eth_getProof for the path, verified against `root`, its nodes stored. */
  private async fetchProof(root: Bytes, address: Bytes, slots: Bytes[]): Promise<void> {
    const ref = this.blockOf(root);
    const block = 'hash' in ref ? { blockHash: hex(ref.hash) } : `0x${ref.number.toString(16)}`;
    const words = slots.map((s) => pad32(s));
    const upstream = this.upstreamFor(ref);
    const reply = await this.upstreamCall(upstream, 'eth_getProof', [hex(address), words.map(hex), block]);
    const nodes = this.verifyProof(root, address, words, reply, this.rejecter(upstream));
    this.keep(nodes, []);
    this.stats.verified++;
  }

  /**
   * Verified nodes and code into the store: readable at once (ChainStore.addProvenState), written
   * to disk without waiting (a failed write loses only what is proven again when next read).
   */
  private keep(nodes: Uint8Array[], codes: Uint8Array[]): void {
    (this.inner.addProvenState as NonNullable<ChainStore['addProvenState']>)(nodes, codes).catch(() => undefined);
  }

  /** Checks an EIP-1186 answer against `root`; returns every node its walks read. */
  private verifyProof(
    root: Bytes,
    address: Bytes,
    words: Uint8Array[],
    reply: unknown,
    reject: (reason: string) => never,
  ): Uint8Array[] {
    if (typeof reply !== 'object' || reply === null) reject('eth_getProof answered no object');
    const r = reply as Record<string, unknown>;
    const accountProof = hexList(r.accountProof, 'accountProof', reject);
    const nodes: Uint8Array[] = [];
    let leaf: Uint8Array | null;
    try {
      leaf = provenValue(root, keccak256(address), accountProof, this.provenNodes, nodes);
    } catch {
      return reject(`the account proof of ${hex(address)} does not lead from state root ${hex(root)}`);
    }
    let account: AccountRecord | null = null;
    if (leaf !== null) {
      const f = RLP.decode(leaf) as Uint8Array[];
      if (!Array.isArray(f) || f.length !== 4) return reject('the proven account is not an account');
      account = {
        nonce: bytesToBigInt(f[0] as Uint8Array),
        balance: bytesToBigInt(f[1] as Uint8Array),
        storageRoot: f[2] as Uint8Array,
        codeHash: f[3] as Uint8Array,
      };
    }
    // The stated fields must be the proven ones (an absent account: zeros).
    const stated = (name: string): bigint => {
      const v = r[name];
      if (typeof v !== 'string' || !/^0x[0-9a-fA-F]{0,64}$/.test(v)) return reject(`${name} is not a quantity`);
      return v === '0x' ? 0n : BigInt(v);
    };
    if (stated('balance') !== (account?.balance ?? 0n))
      reject(`balance of ${hex(address)}: stated ${stated('balance')}, proven ${account?.balance ?? 0n}`);
    if (stated('nonce') !== (account?.nonce ?? 0n))
      reject(`nonce of ${hex(address)}: stated ${stated('nonce')}, proven ${account?.nonce ?? 0n}`);
    const storageRoot = account?.storageRoot ?? EMPTY_TRIE;
    const sp = r.storageProof;
    if (!Array.isArray(sp) || sp.length !== words.length) return reject('storageProof does not answer every slot');
    for (let i = 0; i < words.length; i++) {
      const e = sp[i] as Record<string, unknown> | null;
      if (typeof e !== 'object' || e === null) return reject(`storage proof ${i} is not an object`);
      const proof = hexList(e.proof, `storage proof ${i}`, reject);
      const value = e.value;
      if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{0,64}$/.test(value))
        return reject(`storage proof ${i} value is not a quantity`);
      if (bytesEqual(storageRoot, EMPTY_TRIE)) {
        // An empty storage trie has no nodes (geth proves with [], anvil with ["0x80"]): every slot is zero.
        if ((value === '0x' ? 0n : BigInt(value)) !== 0n)
          reject(`slot ${hex(words[i] as Uint8Array)} of ${hex(address)}: stated ${value}, the storage trie is empty`);
        continue;
      }
      let v: Uint8Array | null;
      try {
        v = provenValue(storageRoot, keccak256(words[i] as Uint8Array), proof, this.provenNodes, nodes);
      } catch {
        return reject(
          `the proof of slot ${hex(words[i] as Uint8Array)} does not lead from storage root ${hex(storageRoot)}`,
        );
      }
      const proven = v === null ? 0n : bytesToBigInt(RLP.decode(v) as Uint8Array);
      if ((value === '0x' ? 0n : BigInt(value)) !== proven)
        reject(
          `slot ${hex(words[i] as Uint8Array)} of ${hex(address)}: stated ${value}, proven 0x${proven.toString(16)}`,
        );
    }
    return nodes;
  }

  /** Code by hash; if the store lacks it, eth_getCode of an account known to have it, checked by keccak. */
  private async code(codeHash: Bytes): Promise<Bytes | undefined> {
    const local = await this.inner.code(codeHash);
    if (local !== undefined || bytesEqual(codeHash, EMPTY_CODE)) return local;
    const owner = this.codeOwners.get(hex(codeHash));
    if (owner === undefined) return undefined;
    await this.flights.run(`code:${hex(codeHash)}`, async () => {
      const ref = this.blockOf(owner.root);
      const block = 'hash' in ref ? { blockHash: hex(ref.hash) } : `0x${ref.number.toString(16)}`;
      const upstream = this.upstreamFor(ref);
      const reply = await this.upstreamCall(upstream, 'eth_getCode', [hex(owner.address), block]);
      const reject = this.rejecter(upstream);
      const code = hexList([reply], 'eth_getCode', reject)[0] as Uint8Array;
      if (!bytesEqual(keccak256(code), codeHash))
        reject(
          `code of ${hex(owner.address)} hashes to ${hex(keccak256(code))}, the proven account's code hash is ${hex(codeHash)}`,
        );
      this.keep([], [code]);
      this.stats.verified++;
    });
    const v = await this.inner.code(codeHash);
    if (v !== undefined) this.stats.cold++;
    return v;
  }
}

function pad32(slot: Uint8Array): Uint8Array {
  if (slot.length === 32) return slot;
  const out = new Uint8Array(32);
  out.set(slot.subarray(Math.max(0, slot.length - 32)), 32 - Math.min(32, slot.length));
  return out;
}

function hexList(v: unknown, what: string, fail: (m: string) => never): Uint8Array[] {
  if (!Array.isArray(v) || v.length > 256) return fail(`${what} is not a list of nodes`);
  return v.map((x) => {
    if (typeof x !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(x)) return fail(`${what} holds a non-hex item`);
    return hexBytes(x);
  });
}

/** The proof-backed `store` (see ProvenState). */
export function withProvenState(
  store: ChainStore,
  opts: ProvenStateOptions,
): { store: ChainStore; state: ProvenState } {
  const state = new ProvenState(store, opts);
  return { store: state.store, state };
}
