// Child processes of a bench run (anvil, `node-cli serve`, `node-cli sync`), each started in its
// own process group and stopped with its whole group on EVERY exit path: normal return, a thrown
// error, an uncaught exception or rejection, SIGINT/SIGTERM/SIGHUP. node_modules/.bin/anvil is a
// JS launcher that spawns the platform binary, so killing only the launcher's pid would leave the
// binary running: the group kill reaches both.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import type { ChildProcess, SpawnOptions } from 'node:child_process';

const live = new Set<ChildProcess>();
const cleanups = new Set<() => void>();

/** A synchronous cleanup (e.g. removing a temporary directory) run on every exit path, after the children are killed. */
export function onExit(fn: () => void): () => void {
  install();
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

function killGroup(p: ChildProcess, signal: NodeJS.Signals): void {
  if (p.pid === undefined || p.exitCode !== null || p.signalCode !== null) return;
  try {
    process.kill(-p.pid, signal);
  } catch {
    // already gone
  }
}

/** Sends SIGKILL to every live child's process group (synchronous: usable in an 'exit' handler). */
export function killAllChildren(): void {
  for (const p of live) killGroup(p, 'SIGKILL');
  live.clear();
  for (const fn of cleanups) {
    try {
      fn();
    } catch {
      // best effort on the way out
    }
  }
  cleanups.clear();
}

let installed = false;
function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAllChildren);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`bench: ${sig}: stopping ${live.size} child process(es)\n`);
      killAllChildren();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (err) => {
    process.stderr.write(`bench: uncaught: ${err.stack ?? String(err)}\n`);
    killAllChildren();
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    process.stderr.write(
      `bench: unhandled rejection: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    killAllChildren();
    process.exit(1);
  });
}

/** spawn() in a new process group, tracked until it exits. */
export function spawnChild(cmd: string, args: string[], opts: SpawnOptions = {}): ChildProcess {
  install();
  const p = spawn(cmd, args, { ...opts, detached: true });
  live.add(p);
  p.on('exit', () => live.delete(p));
  return p;
}

/** Stops one child's group (SIGTERM, then SIGKILL after `graceMs`) and waits for its exit. */
export async function stopChild(p: ChildProcess, graceMs = 5000): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) {
    live.delete(p);
    return;
  }
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  killGroup(p, 'SIGTERM');
  const t = setTimeout(() => killGroup(p, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
  live.delete(p);
}

/** Runs a child to completion (stdout collected, stderr passed through); rejects on a non-zero exit. */
export async function runChild(cmd: string, args: string[], onStderr?: (line: string) => void): Promise<string> {
  const p = spawnChild(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let errTail = '';
  p.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr?.on('data', (d: Buffer) => {
    const s = d.toString();
    errTail = (errTail + s).slice(-4000);
    if (onStderr === undefined) process.stderr.write(s);
    else for (const line of s.split('\n')) if (line !== '') onStderr(line);
  });
  const code = await new Promise<number | null>((r) => p.on('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${errTail}`);
  return out;
}

/**
 * The port a starting `node-cli serve` listens on, once its stdout says so ("listening on
 * 127.0.0.1:<port>") and, given `also`, matches `also` too; rejects when it exits first, with
 * the tail of what it printed.
 */
export function servePort(proc: ChildProcess, also?: RegExp): Promise<number> {
  return new Promise((res, rej) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m && (also === undefined || also.test(out))) res(Number(m[1]));
    });
    proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('exit', (c) => rej(new Error(`serve exited ${c}: ${out.slice(-2000)}`)));
  });
}

/**
 * Waits until `url` answers a JSON-RPC eth_chainId with 200 (30 s at most); fails at once when
 * `proc` (the server being started) has exited.
 */
export async function waitRpc(url: string, proc?: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (proc !== undefined && proc.exitCode !== null) throw new Error(`${url}: process exited`);
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
      });
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url}: did not start`);
}

/**
 * CPU time (user + system, ms) used so far by every live process of the process group `pgid`
 * (Linux /proc; all threads of each process included; 10 ms resolution). A server's cost per
 * request when the load client, not the server, limits the rate on a small machine.
 */
export function groupCpuMs(pgid: number): number {
  let ticks = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the parenthesised command name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(f[2]) !== pgid) continue;
    ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

/** CPU time (user + system, ms; all threads; 10 ms resolution) process `pid` has used so far (Linux /proc). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** One JSON-RPC call to a node the bench started; its result, or an Error naming the method. */
export async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const j = (await r.json()) as { result?: unknown; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

export type Rpc = (calls: [string, unknown[]][]) => Promise<unknown[]>;

/** A JSON-RPC batch client for `url` that throws on any error member (the message names `who`). */
export function batchClient(url: string, who = 'rpc'): Rpc {
  let id = 0;
  return async (calls) => {
    const body = calls.map(([method, params]) => ({ jsonrpc: '2.0', id: id++, method, params }));
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const out = (await r.json()) as { id: number; result?: unknown; error?: unknown }[];
    out.sort((a, b) => a.id - b.id);
    for (const x of out) if (x.error !== undefined) throw new Error(`${who}: ${JSON.stringify(x.error)}`);
    return out.map((x) => x.result);
  };
}
