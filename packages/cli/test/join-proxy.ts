// An HTTP proxy in front of a JSON-RPC upstream for the joining tests: it counts the calls per
// method that pass through it (so a test can show that a second run of the same state queries
// reads nothing from the upstream), and can lie: change an account's balance in eth_getProof
// answers, or one byte of one node of a proof; as a history upstream, change the first
// transaction of a raw block (debug_getRawBlock) or the first log of raw receipts
// (debug_getRawReceipts); as a primary a joining node downloads state from, flip one byte of one
// trie node in chainnode_getStateNodes answers.
import { createServer } from 'node:http';
import { RLP } from '@ethereumjs/rlp';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Lie = 'none' | 'balance' | 'node' | 'tx' | 'log' | 'stateNode';

export interface JoinProxy {
  url: string;
  /** Calls per method since the last reset. */
  counts: Map<string, number>;
  lie: Lie;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

const hexOf = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const bytesOf = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.slice(2), 'hex'));
type Nested = Uint8Array | Nested[];

/** The last byte of the first transaction's signature s flipped (legacy: a list; typed: type || RLP). */
function tamperBlock(raw: string): string {
  const block = RLP.decode(bytesOf(raw)) as Nested[];
  const txs = block[1] as Nested[];
  const tx = txs[0];
  if (tx === undefined) return raw;
  const flipLast = (fields: Nested[]): void => {
    const s = fields[fields.length - 1] as Uint8Array;
    s[s.length - 1] = (s[s.length - 1] as number) ^ 0x01;
  };
  if (Array.isArray(tx)) flipLast(tx);
  else {
    const fields = RLP.decode(tx.subarray(1)) as Nested[];
    flipLast(fields);
    txs[0] = Uint8Array.from([tx[0] as number, ...RLP.encode(fields)]);
  }
  return hexOf(RLP.encode(block));
}

/** The first log of the first receipt with logs gets one more byte of data. */
function tamperReceipts(raws: string[]): string[] {
  for (let i = 0; i < raws.length; i++) {
    const bytes = bytesOf(raws[i] as string);
    const typed = (bytes[0] as number) < 0xc0;
    const fields = RLP.decode(typed ? bytes.subarray(1) : bytes) as Nested[];
    const logs = fields[3] as Nested[][];
    const log = logs[0];
    if (log === undefined) continue;
    log[2] = Uint8Array.from([...(log[2] as Uint8Array), 0x01]);
    const enc = RLP.encode(fields);
    const out = [...raws];
    out[i] = hexOf(typed ? Uint8Array.from([bytes[0] as number, ...enc]) : enc);
    return out;
  }
  return raws;
}

function tamper(reply: Json, lie: Lie): Json {
  const result = reply.result as Json | null | undefined;
  if (lie === 'none' || result === null || result === undefined || typeof result !== 'object') return reply;
  if (lie === 'balance') {
    const b = BigInt(result.balance as string);
    return { ...reply, result: { ...result, balance: `0x${(b + 1_000_000n).toString(16)}` } };
  }
  // One node of the proof: the last byte of the account proof's last node flipped.
  const proof = [...(result.accountProof as string[])];
  const last = proof[proof.length - 1] as string;
  const byte = Number.parseInt(last.slice(-2), 16) ^ 0x01;
  proof[proof.length - 1] = `${last.slice(0, -2)}${byte.toString(16).padStart(2, '0')}`;
  return { ...reply, result: { ...result, accountProof: proof } };
}

export async function startJoinProxy(upstream: string): Promise<JoinProxy> {
  const state: { counts: Map<string, number>; lie: Lie } = { counts: new Map(), lie: 'none' };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let parsed: Json | Json[];
        try {
          parsed = JSON.parse(body) as Json | Json[];
        } catch {
          res.writeHead(400).end();
          return;
        }
        for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
          const method = String(m.method);
          state.counts.set(method, (state.counts.get(method) ?? 0) + 1);
        }
        const up = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        let text = await up.text();
        const single = Array.isArray(parsed) ? undefined : parsed.method;
        if (single === 'eth_getProof' && (state.lie === 'balance' || state.lie === 'node'))
          text = JSON.stringify(tamper(JSON.parse(text) as Json, state.lie));
        if (single === 'chainnode_getStateNodes' && state.lie === 'stateNode') {
          const r = JSON.parse(text) as { result?: { nodes: (string | null)[] } };
          const nodes = r.result?.nodes ?? [];
          const i = nodes.findIndex((n) => n !== null);
          const n = nodes[i];
          if (n !== undefined && n !== null) {
            const byte = Number.parseInt(n.slice(-2), 16) ^ 0x01;
            nodes[i] = `${n.slice(0, -2)}${byte.toString(16).padStart(2, '0')}`;
            text = JSON.stringify(r);
          }
        }
        if (single === 'debug_getRawBlock' && state.lie === 'tx') {
          const r = JSON.parse(text) as Json;
          if (typeof r.result === 'string') text = JSON.stringify({ ...r, result: tamperBlock(r.result) });
        }
        if (single === 'debug_getRawReceipts' && state.lie === 'log') {
          const r = JSON.parse(text) as Json;
          if (Array.isArray(r.result)) text = JSON.stringify({ ...r, result: tamperReceipts(r.result as string[]) });
        }
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(text);
      })().catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    get counts() {
      return state.counts;
    },
    set counts(m) {
      state.counts = m;
    },
    get lie() {
      return state.lie;
    },
    set lie(l) {
      state.lie = l;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
