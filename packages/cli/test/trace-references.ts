// The reference's answer to a trace call, built from anvil's answer where anvil deviates (each
// function names the deviation; docs/traces.md "Where anvil differs" lists them): geth's for the
// debug_trace* tracers, reth's for trace_*, Erigon's for ots_*.
import { keccak256 } from 'ethers';

type Json = Record<string, unknown>;

/** What the receipt and the transaction say, which geth's answers are built from. */
export interface TxFacts {
  gasLimit: string;
  /** The receipt's gasUsed. */
  gasUsed: string;
  /** The block-wide index of each of the receipt's logs (a call's: undefined, from 0). */
  logIndexes?: string[] | undefined;
}

/**
 * geth's text of a halt anvil names as revm does, where they differ (core/vm/errors.go). The
 * workload's one stack underflow is an ADD on an empty stack: geth's text gives the stack's
 * length and the operands the opcode takes (ErrStackUnderflow). Its one overflow is a push onto
 * a full stack: geth's text gives the stack's length and the opcode's limit, 1024 less what it
 * pushes beyond what it pops (ErrStackOverflow).
 */
const GETH_HALTS: Record<string, string> = {
  StackUnderflow: 'stack underflow (0 <=> 2)',
  'Out of stack': 'stack limit reached 1024 (1023)',
};

/** A precompile of Cancun (0x01..0x0a). */
export function isPrecompile(address: unknown): boolean {
  return (
    typeof address === 'string' &&
    /^0x0{38}[0-9a-f]{2}$/.test(address) &&
    BigInt(address) >= 1n &&
    BigInt(address) <= 10n
  );
}

/** A frame and its descendants, depth first. */
function frames(f: Json): Json[] {
  return [f, ...((f.calls as Json[] | undefined) ?? []).flatMap(frames)];
}

/**
 * geth's callTracer answer where anvil's is `a`: the top frame's `gas` is the transaction's gas
 * limit and its `gasUsed` the receipt's (anvil: the gas after intrinsic gas, the block's
 * cumulative gas); a failed frame and its descendants keep no logs (geth's clearFailedLogs; anvil
 * keeps a failed top frame's); a log's `index` is its block-wide index (anvil counts from 0 per
 * transaction, reverted logs included; a call's count from 0 in geth too); halts in geth's words.
 */
export function gethCallFrame(a: Json, tx: TxFacts): Json {
  const copy = structuredClone(a);
  const clear = (f: Json, failed: boolean): void => {
    const gone = failed || f.error !== undefined;
    if (gone) delete f.logs;
    if (typeof f.error === 'string') f.error = GETH_HALTS[f.error] ?? f.error;
    for (const c of (f.calls as Json[] | undefined) ?? []) clear(c, gone);
  };
  clear(copy, false);
  const logs = frames(copy).flatMap((f) => (f.logs as Json[] | undefined) ?? []);
  logs.sort((x, y) => Number(x.index) - Number(y.index));
  logs.forEach((l, i) => {
    l.index = tx.logIndexes === undefined ? `0x${i.toString(16)}` : tx.logIndexes[i];
  });
  return { ...copy, gas: tx.gasLimit, gasUsed: tx.gasUsed };
}

/** An account of a prestate answer with geth's `codeHash` beside its code (anvil leaves it out). */
function withCodeHash(account: Json): Json {
  const code = account.code as string | undefined;
  return code === undefined || code === '0x' ? account : { ...account, codeHash: keccak256(code) };
}

/** Accounts that were empty (no balance, nonce or code) are left out by geth; anvil lists them. */
function gethAccounts(accounts: Json, dropEmpty: boolean): Json {
  const out: Json = {};
  for (const [address, v] of Object.entries(accounts)) {
    const acc = v as Json;
    const empty = (acc.balance ?? '0x0') === '0x0' && acc.nonce === undefined && acc.code === undefined;
    if (!(dropEmpty && empty)) out[address] = withCodeHash(acc);
  }
  return out;
}

/** geth's prestateTracer answer (with or without diffMode) where anvil's is `a`. */
export function gethPrestate(a: Json, diffMode: boolean): Json {
  return diffMode
    ? { pre: gethAccounts(a.pre as Json, true), post: gethAccounts(a.post as Json, false) }
    : gethAccounts(a, true);
}

/**
 * geth's prestateTracer answer with `disableCode` where anvil's is `a`: geth still gives each
 * account with code its `codeHash`, taken from the answer with code (`full`, geth's already).
 */
export function gethPrestateWithoutCode(a: Json, full: Json): Json {
  const out = gethAccounts(a, true);
  for (const [address, acc] of Object.entries(out)) {
    const codeHash = (full[address] as Json | undefined)?.codeHash;
    if (codeHash !== undefined) out[address] = { ...(acc as Json), codeHash };
  }
  return out;
}

/** geth's 4byteTracer answer: calls to precompiles are not counted (anvil counts them). */
export function gethFourByte(a: Json, callFrame: Json): Json {
  const out = { ...a };
  for (const f of frames(callFrame)) {
    const input = (f.input as string | undefined) ?? '0x';
    if (!isPrecompile(f.to) || input.length < 10) continue;
    const key = `${input.slice(0, 10)}-${(input.length - 10) / 2}`;
    const n = (out[key] as number) - 1;
    if (n > 0) out[key] = n;
    else delete out[key];
  }
  return out;
}

/**
 * geth's struct logger answer where anvil's (run with --steps-tracing) is `a`: the result's `gas`
 * is the receipt's (anvil: the block's cumulative gas); `refund` only when not 0; a CREATE's or
 * CREATE2's `gasCost` leaves out the gas handed to the new frame (anvil's includes it). An entry
 * carries the error its opcode met before it ran, in geth's words: out of gas, with the opcode's
 * constant gas as `gasCost` (anvil: 0 or, for a CALL, what it would have cost; a CALL's constant
 * gas is EIP-2929's warm access, 100, and another opcode's is taken from an earlier run of the
 * same pc), or a stack underflow; an error the opcode meets as it runs (0xfe, a bad jump) is on no entry
 * (geth's interpreter logs the opcode first and reports such errors to OnFault, which the struct
 * logger leaves out; core/vm/interpreter.go).
 */
const CALL_OPS = new Set(['CALL', 'CALLCODE', 'DELEGATECALL', 'STATICCALL']);

export function gethStructLogs(a: Json, tx: Pick<TxFacts, 'gasUsed'>): Json {
  const logs = a.structLogs as Json[];
  const structLogs = logs.map((s, i) => {
    const { refund, error, ...rest } = s;
    const out: Json = refund === 0 || refund === undefined ? rest : { ...rest, refund };
    const next = logs[i + 1];
    if ((s.op === 'CREATE' || s.op === 'CREATE2') && next !== undefined && next.depth === (s.depth as number) + 1)
      out.gasCost = (s.gasCost as number) - (next.gas as number);
    if (error === 'Some(OutOfGas)') {
      const earlier = logs.slice(0, i).findLast((e) => e.pc === s.pc && e.op === s.op && e.error === undefined);
      out.error = 'out of gas';
      if (CALL_OPS.has(s.op as string)) out.gasCost = 100;
      else if (earlier !== undefined) out.gasCost = earlier.gasCost;
    } else if (error === 'Some(StackUnderflow)') out.error = GETH_HALTS.StackUnderflow;
    else if (error !== undefined && error !== 'Some(InvalidFEOpcode)' && error !== 'Some(InvalidJump)')
      out.error = error;
    return out;
  });
  return { ...a, gas: Number(tx.gasUsed), structLogs };
}

/**
 * geth's debug_traceCall answer of an unpriced call where anvil's is `a`: BASEFEE reads 0 (geth
 * lowers the block's base fee to 0 for a call without a gas price, eth/tracers/api.go TraceCall;
 * anvil reads the block's, `baseFee`), in the stack entries and the words returned.
 */
export function gethUnpricedBaseFee(a: Json, baseFee: string): Json {
  const word = BigInt(baseFee).toString(16).padStart(64, '0');
  const text = JSON.stringify(a).replaceAll(`"${baseFee}"`, '"0x0"').replaceAll(word, '0'.repeat(64));
  return JSON.parse(text) as Json;
}

/**
 * reth's flat traces where anvil's are `a`: calls to precompiles without value are left out
 * (revm-inspectors' parity config, `exclude_precompile_calls`; anvil lists them), and the
 * `subtraces` and `traceAddress` around them close up.
 */
export function rethTraces(a: Json[]): Json[] {
  const out = a.filter((t) => !rethLeavesOut(t)).map((t) => structuredClone(t));
  for (const g of a.filter(rethLeavesOut)) {
    const parent = (g.traceAddress as number[]).slice(0, -1);
    const last = (g.traceAddress as number[])[parent.length] as number;
    for (const t of out) {
      const p = t.traceAddress as number[];
      if (t.transactionHash !== g.transactionHash || !parent.every((x, i) => p[i] === x)) continue;
      if (p.length === parent.length) t.subtraces = (t.subtraces as number) - 1;
      else if ((p[parent.length] as number) > last) p[parent.length] = (p[parent.length] as number) - 1;
    }
  }
  return out;
}

/** A call to a precompile without value, which reth's flat traces leave out. */
function rethLeavesOut(t: Json): boolean {
  const action = t.action as Json;
  return t.type === 'call' && isPrecompile(action.to) && BigInt((action.value as string) ?? '0x0') === 0n;
}

/**
 * reth's trace_filter page where anvil's is `page`, given anvil's traces of every block of the
 * range (`all`): the entries reth lists, each as reth's trace of its block gives it (a page holds
 * matching entries only, so their parents' `subtraces` come from the whole trace).
 */
export function rethFilterPage(page: Json[], all: Json[]): Json[] {
  const key = (t: Json) => `${t.transactionHash}/${(t.traceAddress as number[]).join(',')}`;
  const kept = all.filter((t) => !rethLeavesOut(t));
  const reth = new Map(rethTraces(all).map((t, i) => [key(kept[i] as Json), t]));
  return page.filter((t) => !rethLeavesOut(t)).map((t) => reth.get(key(t)) as Json);
}

/** trace_replay*'s TraceResults with reth's traces. */
export function rethReplay(r: Json): Json {
  return { ...r, trace: rethTraces(r.trace as Json[]) };
}

/**
 * Erigon's ots_traceTransaction, from anvil's callTracer frame `f` (anvil's own answer leaves out
 * CREATE, CREATE2 and SELFDESTRUCT entries, lists calls to precompiles and gives STATICCALL and
 * DELEGATECALL a value): every frame in the order entered, precompiles left out, `value` null for
 * STATICCALL and DELEGATECALL, a SELFDESTRUCT one deeper than the entry before it. `failedAt`: the
 * address of each failed creation (geth's callTracer leaves its `to` out).
 */
export function erigonTrace(f: Json, failedAt: readonly string[]): Json[] {
  const out: Json[] = [];
  const failed = [...failedAt];
  const walk = (x: Json, depth: number): void => {
    const type = x.type as string;
    const creation = type === 'CREATE' || type === 'CREATE2';
    const to = x.to ?? (creation ? failed.shift() : undefined);
    if (type === 'SELFDESTRUCT') {
      const last = out[out.length - 1] as Json;
      out.push({
        type,
        depth: (last.depth as number) + 1,
        from: x.from,
        to,
        value: x.value,
        input: '0x',
        output: '0x',
      });
    } else if (!isPrecompile(to)) {
      const value = type === 'STATICCALL' || type === 'DELEGATECALL' ? null : (x.value ?? '0x0');
      out.push({ type, depth, from: x.from, to, value, input: x.input, output: x.output ?? '0x' });
    }
    for (const c of (x.calls as Json[] | undefined) ?? []) walk(c, depth + 1);
  };
  walk(f, 0);
  return out;
}

/**
 * Erigon's ots_getInternalOperations, from anvil's callTracer frame `f`: every frame below the
 * transaction's own that moves value with CALL (0), self-destructs (1) or creates (2, 3), failed
 * or not (anvil also lists the transaction's own, and leaves out a CREATE2 whose child
 * self-destructs).
 */
export function erigonOperations(f: Json, failedAt: readonly string[]): Json[] {
  const kinds: Record<string, number> = { SELFDESTRUCT: 1, CREATE: 2, CREATE2: 3 };
  const failed = [...failedAt];
  const out: Json[] = [];
  for (const x of frames(f).slice(1)) {
    const type = x.type as string;
    const kind = type === 'CALL' ? (BigInt((x.value as string) ?? '0x0') > 0n ? 0 : undefined) : kinds[type];
    const to = x.to ?? (kind === 2 || kind === 3 ? failed.shift() : undefined);
    if (kind !== undefined) out.push({ type: kind, from: x.from, to, value: x.value ?? '0x0' });
  }
  return out;
}

/** A receipt as Erigon's MarshalReceipt writes it: blob fields only for blob transactions. */
export function erigonReceipt(r: Json): Json {
  const { blobGasPrice, ...rest } = r;
  return r.type === '0x3' ? r : rest;
}

/** A search page: receipts' `timestamp` a JSON number; ots_searchTransactionsAfter newest first within a block too. */
export function erigonSearchPage(page: Json, after: boolean): Json {
  const pairs = (page.txs as Json[]).map((tx, i) => [tx, (page.receipts as Json[])[i] as Json] as const);
  // Erigon collects After's matches oldest first and reverses the whole page; anvil reverses the blocks only.
  const key = (tx: Json) => Number(tx.blockNumber) * 1e6 + Number(tx.transactionIndex);
  if (after) pairs.sort(([a], [b]) => key(b) - key(a));
  return {
    ...page,
    txs: pairs.map(([tx]) => tx),
    receipts: pairs.map(([, r]) => ({ ...erigonReceipt(r), timestamp: Number(r.timestamp) })),
  };
}

/** geth's frame errors (anvil's words for them) in Parity's words (revm-inspectors' TraceStyle::Parity). */
const PARITY_ERRORS: Record<string, string> = {
  'execution reverted': 'Reverted',
  'out of gas': 'Out of gas',
  'invalid opcode: INVALID': 'Bad instruction',
  'invalid jump destination': 'Bad jump destination',
  StackUnderflow: 'StackUnderflow',
};

/**
 * The Parity flat trace, as anvil and reth lay it out (calls to precompiles listed: rethTraces
 * drops them), of the call tree anvil's callTracer gives as `f`: one entry per frame, depth first,
 * its `subtraces` and `traceAddress`; a SELFDESTRUCT a `suicide`; a frame that failed other than
 * by reverting without a `result`, a reverted one with its revert data as `output` (a creation's
 * as `code`). The top entry's `gas` leaves out the intrinsic gas, as anvil's callTracer's already
 * does; its `gasUsed` (`topGasUsed`) too. `failedAt`: the address of each failed creation, in
 * order (anvil's callTracer leaves it out).
 */
export function parityFlat(f: Json, topGasUsed: string, failedAt: readonly string[] = []): Json[] {
  const failed = [...failedAt];
  const flat = (x: Json, address: number[]): Json[] => {
    const type = x.type as string;
    const calls = (x.calls as Json[] | undefined) ?? [];
    const error = x.error === undefined ? undefined : (PARITY_ERRORS[x.error as string] ?? (x.error as string));
    const ran = error === undefined || error === 'Reverted';
    const gasUsed = address.length === 0 ? topGasUsed : (x.gasUsed as string);
    let entry: Json;
    if (type === 'SELFDESTRUCT') {
      entry = { action: { address: x.from, balance: x.value, refundAddress: x.to }, result: null, type: 'suicide' };
    } else if (type === 'CREATE' || type === 'CREATE2') {
      const action = {
        from: x.from,
        gas: x.gas,
        init: x.input,
        value: x.value ?? '0x0',
        creationMethod: type.toLowerCase(),
      };
      const to = x.to ?? (error === undefined ? undefined : failed.shift());
      entry = { action, result: ran ? { address: to, code: x.output ?? '0x', gasUsed } : null, type: 'create' };
    } else {
      const action = {
        from: x.from,
        callType: type.toLowerCase(),
        gas: x.gas,
        input: x.input,
        to: x.to,
        value: x.value ?? '0x0',
      };
      entry = { action, result: ran ? { gasUsed, output: x.output ?? '0x' } : null, type: 'call' };
    }
    if (error !== undefined) entry.error = error;
    entry.subtraces = calls.length;
    entry.traceAddress = address;
    return [entry, ...calls.flatMap((c, i) => flat(c, [...address, i]))];
  };
  return flat(f, []);
}

/**
 * The Parity stateDiff, as anvil and reth give it, of what anvil's prestateTracer (diffMode)
 * gives as `d`: each account of `pre` or `post`; a field `post` leaves out is unchanged ("="),
 * one it holds changed (`*`, from `pre`'s value: an absent nonce is 0, an absent slot zero), and
 * every field of an account the transaction created where no balance was (empty in `pre`, with a
 * nonce or code in `post`) new (`+`): revm-inspectors' populate_state_diff, which gives an empty
 * account that is only touched or funded `*`.
 */
export function parityStateDiff(d: Json): Json {
  const pre = d.pre as Record<string, Json>;
  const post = d.post as Record<string, Json>;
  const zero = `0x${'0'.repeat(64)}`;
  const out: Json = {};
  for (const address of new Set([...Object.keys(pre), ...Object.keys(post)])) {
    const before = pre[address] ?? {};
    const after = post[address] ?? {};
    const born =
      (before.balance ?? '0x0') === '0x0' &&
      before.nonce === undefined &&
      before.code === undefined &&
      (after.nonce !== undefined || after.code !== undefined);
    const field = (was: unknown, now: unknown): unknown => {
      if (born) return { '+': now ?? was };
      return now === undefined ? '=' : { '*': { from: was, to: now } };
    };
    const nonce = (n: unknown) => (n === undefined ? undefined : `0x${(n as number).toString(16)}`);
    const storage: Json = {};
    const slotsBefore = (before.storage as Json | undefined) ?? {};
    const slotsAfter = (after.storage as Json | undefined) ?? {};
    for (const slot of new Set([...Object.keys(slotsBefore), ...Object.keys(slotsAfter)]))
      storage[slot] = born
        ? { '+': slotsAfter[slot] ?? zero }
        : { '*': { from: slotsBefore[slot] ?? zero, to: slotsAfter[slot] ?? zero } };
    out[address] = {
      balance: field(before.balance ?? '0x0', after.balance),
      nonce: born ? { '+': nonce(after.nonce) ?? '0x0' } : field(nonce(before.nonce) ?? '0x0', nonce(after.nonce)),
      code: born ? { '+': after.code ?? '0x' } : field(before.code, after.code),
      storage,
    };
  }
  return out;
}
