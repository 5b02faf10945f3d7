// `npm run bench:flood [-- --datadir <dir>] [--connections 2000] [--senders 200] [--batch 100]
//  [--cli <node-cli.js>]`: the flood on a freshly started `node-cli serve` (cold
// caches): open 2,000 WebSocket connections, then 200 of them each send, at the same moment, one
// batch of 100 eth_getBlockByNumber(n, true) for blocks 1..100 (the same batch everywhere).
// Prints the time to the first and to the last complete answer, the server's RSS before and its
// peak during the flood (sampled every 50 ms from /proc), and checks every answer (100 blocks,
// numbers 1..100, all 200 answers byte-identical). Without --datadir the fixture chain is
// imported into a temporary datadir first. The client shares the machine's cores with the server.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { WsCtor, rssMb } from '@chainnode/testkit';
import type { WsClient } from '@chainnode/testkit';
import { servePort } from './src/children.js';
import { arg, benchBudget, cliFromArgs, createKeySync, importIntoTemp, ROOT } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:flood');

const cli = cliFromArgs();
const connections = Number(arg('connections', '2000'));
const senders = Number(arg('senders', '200'));
const batchSize = Number(arg('batch', '100'));

function open(url: string): Promise<WsClient> {
  return new Promise((res, rej) => {
    const ws = new WsCtor(url);
    ws.on('open', () => res(ws));
    ws.on('error', rej);
  });
}

async function main(): Promise<void> {
  const given = arg('datadir');
  const { datadir, tmp } =
    given !== undefined
      ? { datadir: given, tmp: undefined }
      : importIntoTemp(cli, join(ROOT, 'fixtures'), 'bench-flood-');
  const key = createKeySync(cli, datadir, benchBudget('flood'));
  const srv = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((r) => srv.on('exit', r));
  const sockets: WsClient[] = [];
  try {
    const port = await servePort(srv);
    const pid = srv.pid!;
    const url = `ws://127.0.0.1:${port}/ws/v3/${key}`;
    for (let i = 0; i < connections; i += 100) {
      sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, connections - i) }, () => open(url)))));
    }
    const rssBefore = rssMb(pid);
    const batch = JSON.stringify(
      Array.from({ length: batchSize }, (_, i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'eth_getBlockByNumber',
        params: [`0x${(i + 1).toString(16)}`, true],
      })),
    );
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
    const load = loadavg()[0]!;
    const start = performance.now();
    const answers = await Promise.all(
      sockets.slice(0, senders).map(
        (ws) =>
          new Promise<{ at: number; text: string }>((res) => {
            ws.on('message', (d) => res({ at: performance.now() - start, text: d.toString('utf8') }));
            ws.send(batch);
          }),
      ),
    );
    clearInterval(sampler);
    peak = Math.max(peak, rssMb(pid));
    const times = answers.map((a) => a.at).sort((a, b) => a - b);
    const first = answers[0]!.text;
    const parsed = JSON.parse(first) as { id: number; result: { number: string } | null }[];
    const ok =
      parsed.length === batchSize &&
      parsed.every((r, i) => r.id === i && r.result !== null && Number(r.result.number) === i + 1) &&
      answers.every((a) => a.text === first);
    const result = {
      connections,
      senders,
      batch: batchSize,
      answerBytes: Buffer.byteLength(first),
      firstMs: Math.round(times[0]!),
      medianMs: Math.round(times[Math.floor(times.length / 2)]!),
      lastMs: Math.round(times.at(-1)!),
      rssBeforeMb: Math.round(rssBefore),
      rssPeakMb: Math.round(peak),
      answersOk: ok,
      load1: load,
    };
    console.log(JSON.stringify(result));
    console.log(
      `flood: ${connections} WS open, ${senders} x batch of ${batchSize} eth_getBlockByNumber(n,true): first answer ${result.firstMs} ms, ` +
        `median ${result.medianMs} ms, last ${result.lastMs} ms; server RSS ${result.rssBeforeMb} -> peak ${result.rssPeakMb} MB; ` +
        `answers ${ok ? 'all correct and identical' : 'WRONG'} (${result.answerBytes} bytes each); load avg ${load.toFixed(1)}`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    for (const ws of sockets) ws.close();
    srv.kill('SIGTERM');
    await exited;
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
