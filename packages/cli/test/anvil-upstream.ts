// Test helpers for anvil (the registry's @foundry-rs/anvil 1.7.1 binary) as a live upstream:
// start it on a free loopback port from a Cancun genesis.json whose alloc funds exactly the 4 dev
// accounts anvil creates (so anvil's state equals the alloc: see ../shared/research/follow.md),
// JSON-RPC calls and batches, a workload of every tx type anvil mines, and stopping it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, freePort, repoRoot } from '@chainnode/testkit';

export { freePort };

export const DEV: readonly string[] = ANVIL_DEV_ACCOUNTS;

export const GENESIS = cancunGenesis({ accounts: DEV, balance: '0x21e19e0c9bab2400000' });

/**
 * Runtime: with calldata, LOG2(data = calldata, topics = [calldata[0..32], caller]) and
 * SSTORE(calldata[0..32], caller); without calldata, REVERT.
 */
const RUNTIME = '361560195736600060003733600035366000a23360003555005b60006000fd';
export const LOGGER_INIT = `0x601f600c600039601f6000f3${RUNTIME}`;
/**
 * Init code that reverts: a failed contract creation. anvil 1.7.1 leaves an empty account at the
 * would-be contract address in its state trie (measured with eth_getProof), which geth and
 * @ethereumjs/vm do not, so the block's stateRoot cannot be reproduced: a follower of anvil
 * stops there with a stateRoot mismatch (tested as the verification-failure case).
 */
export const REVERTING_INIT = '0x60006000fd';

export interface Envelope {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * fetch, retried once when the connection was closed under it (a keep-alive socket the server
 * closed as the request went out: a transport race, not an answer).
 */
export async function post(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    await new Promise((r) => setTimeout(r, 100));
    return fetch(url, init);
  }
}

export async function call(url: string, method: string, params: unknown[]): Promise<Envelope> {
  const res = await post(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Envelope;
}

export async function result<T = unknown>(url: string, method: string, params: unknown[]): Promise<T> {
  const r = await call(url, method, params);
  if (r.error !== undefined) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result as T;
}

/** Many calls as JSON-RPC batches (in chunks of 200); envelopes in call order. */
export async function batch(url: string, calls: [string, unknown[]][]): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (let i = 0; i < calls.length; i += 200) {
    const chunk = calls.slice(i, i + 200);
    const res = await post(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chunk.map(([method, params], j) => ({ jsonrpc: '2.0', id: i + j, method, params }))),
    });
    const replies = (await res.json()) as Envelope[];
    if (!Array.isArray(replies)) throw new Error(`batch: ${JSON.stringify(replies).slice(0, 200)}`);
    const byId = new Map(replies.map((r) => [r.id, r]));
    chunk.forEach((_, j) => {
      out.push(byId.get(i + j) ?? { error: { code: 0, message: 'missing reply' } });
    });
  }
  return out;
}

const live = new Set<() => void>();
process.on('exit', () => {
  for (const k of live) k();
});

export interface Anvil {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export async function startAnvil(dir: string, extra: string[] = []): Promise<Anvil> {
  const genesisPath = join(dir, 'anvil-genesis.json');
  await writeFile(genesisPath, JSON.stringify(GENESIS));
  const port = await freePort();
  const bin = join(repoRoot(), 'node_modules', '.bin', 'anvil');
  // node_modules/.bin/anvil is a JS launcher that spawns the platform binary: run it in its own
  // process group and stop the whole group, or the binary outlives the test (holding its pipes).
  const proc = spawn(
    bin,
    [
      '--init',
      genesisPath,
      '--hardfork',
      'cancun',
      '--accounts',
      '4',
      '--no-create2',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      ...extra,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const killGroup = () => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  live.add(killGroup);
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    try {
      await result(url, 'eth_chainId', []);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() - t0 > 20_000) {
        killGroup();
        throw new Error(`anvil did not start:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    proc,
    stop: async () => {
      killGroup();
      await exited;
      live.delete(killGroup);
    },
  };
}

/** A tx request for eth_sendTransaction / anvil_reorg: kind k of the workload from dev account `from`. */
export function txRequest(k: number, i: number, logger: string | undefined): Record<string, unknown> {
  const from = DEV[i % 4] as string;
  const to = DEV[(i + 1) % 4] as string;
  const word = `0x${(i * 7919 + k).toString(16).padStart(64, '0')}`;
  switch (k % 7) {
    case 0: // legacy transfer
      return { from, to, value: `0x${(1000 + i).toString(16)}`, gasPrice: '0x77359400', type: '0x0', gas: '0x5208' };
    case 1: // EIP-2930 transfer with an access list
      return {
        from,
        to,
        value: '0x1',
        gasPrice: '0x77359400',
        type: '0x1',
        gas: '0x7530',
        accessList: [{ address: logger ?? to, storageKeys: [word] }],
      };
    case 2: // EIP-1559 transfer
      return {
        from,
        to,
        value: '0x2',
        maxFeePerGas: '0x77359400',
        maxPriorityFeePerGas: '0x3b9aca00',
        type: '0x2',
        gas: '0x5208',
      };
    case 3: // log-emitting, storage-writing call (1559)
      return logger === undefined
        ? { from, to, value: '0x3', type: '0x2', gas: '0x5208' }
        : { from, to: logger, data: `${word}${'ab'.repeat(i % 5)}`, type: '0x2', gas: '0x186a0' };
    case 4: // reverting call (legacy)
      return logger === undefined
        ? { from, to, value: '0x4', gasPrice: '0x77359400', type: '0x0', gas: '0x5208' }
        : { from, to: logger, data: '0x', gasPrice: '0x77359400', type: '0x0', gas: '0x186a0' };
    case 5: // contract creation (2930)
      return { from, data: LOGGER_INIT, gasPrice: '0x77359400', type: '0x1', gas: '0x30d40' };
    default: // contract creation (legacy). (Not a failing creation: see REVERTING_INIT.)
      return { from, data: LOGGER_INIT, gasPrice: '0x77359400', type: '0x0', gas: '0x30d40' };
  }
}
