// An HTTP proxy in front of a JSON-RPC upstream for the joining tests: it counts the calls per
// method that pass through it (so a test can show that a second run of the same state queries
// reads nothing from the upstream), and can lie: change an account's balance in eth_getProof
// answers, or one byte of one node of a proof.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Lie = 'none' | 'balance' | 'node';

export interface JoinProxy {
  url: string;
  /** Calls per method since the last reset. */
  counts: Map<string, number>;
  lie: Lie;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

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
        if (!Array.isArray(parsed) && parsed.method === 'eth_getProof' && state.lie !== 'none')
          text = JSON.stringify(tamper(JSON.parse(text) as Json, state.lie));
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
