// `node bench/dist/proof-cpu.js --keep <dir> [--cli <node-cli.js>] [--threads 1] [--duration 5]`:
// eth_getProof at random historical blocks on the scaled chain kept by
// `npm run bench:http -- --varied --keep <dir>`, reported as req/s AND as the server's CPU time
// per request (utime + stime of the serve process from /proc, over the pass). On a machine shared
// with other work, req/s follows the load of the moment; CPU time per request much less, so a
// before/after pair (--cli of the other build) run back to back compares the builds.
// Two mixes as the varied bench draws them: a fresh account at a block at or after its creation
// (no slot), and one slot of one of the contracts at a random block. Each: a cold pass (every
// body once, first time this server is asked), then a warm load over the same bodies, every
// answer's digest compared with its cold-pass answer. Nothing is checked beyond that (the varied
// bench checks every answer against the model).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawLoadVaried, rawOnce } from './src/load.js';
import { waitRpc } from './src/children.js';
import { arg, benchBudget, keyArgs, keyOf, NODE_CLI } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:proof-cpu');

interface Model {
  blocks: { stateRoot: string }[];
  contracts: string[];
  slotKeys: string[][];
  fresh: { address: string; block: number }[];
}

async function main(): Promise<void> {
  const dir = arg('keep');
  if (dir === undefined) throw new Error('--keep <dir>: a scaled chain kept by bench:http --varied --keep');
  const cli = arg('cli', NODE_CLI) as string;
  const threads = arg('threads', '1') as string;
  const seconds = Number(arg('duration', '5'));
  const datadir = join(dir, 'data');
  const m = JSON.parse(readFileSync(join(dir, 'model.json'), 'utf8')) as Model;
  const key = keyOf(
    execFileSync(process.execPath, [cli, ...keyArgs(datadir, benchBudget('proof-cpu'))], { encoding: 'utf8' }),
  );
  const port = 30000 + Math.floor(Math.random() * 20000);
  const srv = spawn(
    process.execPath,
    [cli, 'serve', '--datadir', datadir, '--port', String(port), '--threads', threads],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  try {
    const path = `/v3/${key}`;
    await waitRpc(`http://127.0.0.1:${port}${path}`);
    const cpuMs = (): number => {
      const f = (readFileSync(`/proc/${srv.pid}/stat`, 'utf8').split(') ')[1] as string).split(' ');
      return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, 100 Hz ticks
    };
    const head = m.blocks.length - 1;
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      return seed % n;
    };
    const q = (n: number): string => `0x${n.toString(16)}`;
    const body = (i: number, params: unknown[]): string =>
      JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_getProof', params });
    const n = 20000;
    const accounts = Array.from({ length: n }, (_, i) => {
      const a = m.fresh[rnd(m.fresh.length)] as { address: string; block: number };
      return body(i, [a.address, [], q(a.block + rnd(head - a.block + 1))]);
    });
    const slots = Array.from({ length: n }, (_, i) => {
      const c = rnd(m.contracts.length);
      const keys = m.slotKeys[c] as string[];
      return body(i, [m.contracts[c], [keys[rnd(keys.length)]], q(1 + rnd(head))]);
    });
    console.log(`proof-cpu: ${cli}, --threads ${threads}, ${new Date().toISOString()}`);
    for (const [name, bodies] of [
      ['account proofs, no slot', accounts],
      ['slot proofs', slots],
    ] as const) {
      let c0 = cpuMs();
      const cold = await rawOnce({ host: '127.0.0.1', port, path, bodies: [...bodies], connections: 64, seconds: 0 });
      const coldUs = ((cpuMs() - c0) * 1000) / bodies.length;
      c0 = cpuMs();
      const t0 = Date.now();
      const r = await rawLoadVaried({
        host: '127.0.0.1',
        port,
        path,
        bodies: [...bodies],
        expected: cold.digests,
        connections: 64,
        seconds,
        warmup: 0,
      });
      const answered = r.rps * ((Date.now() - t0) / 1000);
      const warmUs = ((cpuMs() - c0) * 1000) / answered;
      console.log(
        `| ${name} | ${Math.round(cold.rps)} | ${coldUs.toFixed(0)} | ${Math.round(r.rps)} | ${warmUs.toFixed(0)} | ${r.p50} | ${r.p99} | ${cold.bad + cold.errors + r.bad + r.mismatched + r.errors} |`,
      );
    }
  } finally {
    srv.kill('SIGTERM');
    await new Promise((res) => srv.on('exit', res));
  }
}

await main();
