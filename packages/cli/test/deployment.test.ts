// The deployment of docs/deployment.md, run for real: Debian's nginx with deploy/nginx/chainnode.conf
// (only its upstream servers and listen port replaced by loopback ports) in front of three
// `serve --threads 2 --ledger redis://…` replicas, the first two following anvil, the third
// following the first, one Redis. Through the proxy: HTTP and WebSocket calls; a key created on one
// replica answered everywhere; polled filters shared through Redis while a workload's blocks arrive
// (replica-filters.ts); a replica SIGKILLed under load (errors at most for the calls in flight on
// it, none once the proxy has routed around it), restarted and taken back; a rolling restart
// (SIGTERM, wait, start) with no failed call; a SIGTERM right after a restarted replica's first
// /health 200 exits 0.
// Skips with one line when nginx or redis-server is not installed (.ci/run installs them).
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, missingTools, redisServerPath, repoRoot, startRedis, tempDir, toolPath } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { GENESIS, startAnvil } from './anvil-upstream.js';
import { FILTER_TIMEOUT_MS, filtersAcrossReplicas } from './replica-filters.js';
import { createKeyCli, perTest, rpc, sleep, spawnServe, startService, watchLog } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';
import { WsClient } from './subs-helpers.js';

const NGINX_CONF = join(repoRoot(), 'deploy', 'nginx', 'chainnode.conf');
const nginx = toolPath('nginx');
const ready = nginx !== undefined && redisServerPath() !== undefined;
if (!ready) console.log(missingTools(['nginx', 'redis-server']));
const maybe = ready ? test : test.skip;

const { cleanups } = perTest();

/** The pause of each load loop between two calls. */
const PACE_MS = 10;

/** deploy/nginx/chainnode.conf with its upstream servers and listen port replaced. */
function proxyConfig(listen: number, replicas: number[]): string {
  const text = readFileSync(NGINX_CONF, 'utf8');
  const servers = [...text.matchAll(/^(\s*)server \S+:\d+( .*;)$/gm)];
  expect(servers.length).toBe(3);
  let out = text;
  servers.forEach((m, i) => {
    out = out.replace(m[0], `${m[1]}server 127.0.0.1:${replicas[i]}${m[2]}`);
  });
  out = out.replace(/^(\s*)listen \d+;/m, `$1listen 127.0.0.1:${listen};`);
  expect(out).toContain(`listen 127.0.0.1:${listen};`);
  return out;
}

async function startNginx(replicas: number[]): Promise<string> {
  const tmp = await tempDir('chainnode-nginx-');
  cleanups.push(tmp.cleanup);
  chmodSync(tmp.dir, 0o755);
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(tmp.dir, d), { mode: 0o777 });
  const port = await freePort();
  writeFileSync(join(tmp.dir, 'chainnode.conf'), proxyConfig(port, replicas));
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => `${t}_temp_path ${join(tmp.dir, t === 'client_body' ? 'body' : t)};`)
    .join(' ');
  writeFileSync(
    join(tmp.dir, 'nginx.conf'),
    `${process.getuid?.() === 0 ? 'user root root;\n' : ''}daemon off;\nworker_processes 1;\npid ${join(tmp.dir, 'nginx.pid')};\nerror_log stderr error;\nevents { worker_connections 1024; }\nhttp { ${temp} include ${join(tmp.dir, 'chainnode.conf')}; }\n`,
  );
  const base = `http://127.0.0.1:${port}`;
  await startService(
    'nginx',
    nginx as string,
    ['-p', tmp.dir, '-c', join(tmp.dir, 'nginx.conf'), '-e', 'stderr'],
    cleanups,
    () =>
      fetch(`${base}/health`).then(
        (r) => r.status === 200,
        () => false,
      ),
    300,
  );
  return base;
}

/**
 * Calls through the proxy from `clients` loops until stopped; every failure with its time. Each
 * loop pauses PACE_MS after each answer: a steady stream of calls reaches every replica, and the
 * test process no longer spends most of the suite's CPU in its own HTTP client (as unpaced loops did).
 */
function load(url: string, clients: number) {
  const failures: { at: number; what: string }[] = [];
  let ok = 0;
  let inFlight = 0;
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      inFlight++;
      // A failure's time is when its call was sent: a stalled test process reads replies late.
      const at = Date.now();
      try {
        const r = await rpc(url, 'eth_blockNumber', []);
        if (r.status === 200 && typeof r.body.result === 'string') ok++;
        else failures.push({ at, what: `${r.status} ${JSON.stringify(r.body)}` });
      } catch (err) {
        failures.push({ at, what: String((err as Error).cause ?? err) });
      } finally {
        inFlight--;
      }
      await sleep(PACE_MS);
    }
  });
  return {
    failures,
    get ok() {
      return ok;
    },
    get inFlight() {
      return inFlight;
    },
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Calls answered by the replica with this metrics port (of `method` only, if given). */
async function callsOn(metricsPort: number, method?: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^chainnode_rpc_calls_total\{([^}]*)\} (\d+)$/gm))
    if (method === undefined || m[1]?.includes(`method="${method}"`)) n += Number(m[2]);
  return n;
}

async function healthy(port: number): Promise<void> {
  for (let i = 0; ; i++) {
    if (
      (await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.status,
        () => 0,
      )) === 200
    )
      return;
    if (i > 1200) throw new Error(`replica on ${port} never healthy`);
    await sleep(50);
  }
}

maybe('nginx + 3 replicas + Redis: WebSocket, filters, kill, take-back, rolling restart, startup SIGTERM', async () => {
  const redis: RedisProcess = await startRedis();
  cleanups.push(async () => {
    await redis.stop('SIGKILL');
    await redis.cleanup();
  });
  const tmp = await tempDir('chainnode-deployment-');
  cleanups.push(tmp.cleanup);
  const anvil = await startAnvil(tmp.dir);
  cleanups.push(anvil.stop);
  const genesis = join(tmp.dir, 'genesis.json');
  writeFileSync(genesis, JSON.stringify(GENESIS));
  // Filters expire after FILTER_TIMEOUT_MS without a poll, so the test sees them expire. Redis
  // commands get the default timeout: a poll whose reply is late settles before it answers.
  const config = join(tmp.dir, 'server.json');
  writeFileSync(config, JSON.stringify({ filterTimeoutMs: FILTER_TIMEOUT_MS }));
  const dirs = [0, 1, 2].map((i) => join(tmp.dir, `data-${i}`));
  const ports = [await freePort(), await freePort(), await freePort()];
  const metricsPorts = [await freePort(), await freePort(), await freePort()];
  // The key the follower reads its primary with, and the clients' key: created on replica 0's
  // datadir, shared through Redis.
  const { key: primaryKey } = await createKeyCli(dirs[0] as string, 'custom', ['--ledger', redis.url]);
  const args = (i: number): string[] => [
    '--port',
    String(ports[i]),
    '--threads',
    '2',
    '--ledger',
    redis.url,
    '--metrics-port',
    String(metricsPorts[i]),
    '--follow',
    // Over WebSocket: new heads pushed, no polling while the test runs.
    i === 2 ? `ws://127.0.0.1:${ports[0]}/ws/v3/${primaryKey}` : anvil.url.replace('http', 'ws'),
    '--genesis',
    genesis,
    '--config',
    config,
  ];
  const replicas: (ServeProcess | undefined)[] = [undefined, undefined, undefined];
  cleanups.push(async () => {
    await Promise.all(replicas.map((r) => r?.stop('SIGKILL')));
  });
  const start = async (i: number): Promise<ServeProcess> => {
    const r = await spawnServe(dirs[i] as string, args(i));
    replicas[i] = r;
    await healthy(ports[i] as number);
    return r;
  };
  await start(0);
  await Promise.all([start(1), start(2)]);
  const proxy = await startNginx(ports as number[]);

  // A key created (on replica 1's datadir) after every replica started: effective on each, directly and through the proxy.
  const { key } = await createKeyCli(dirs[1] as string, 'custom', ['--ledger', redis.url]);
  let head = (await rpc(`http://127.0.0.1:${ports[0]}/v3/${primaryKey}`, 'eth_blockNumber', [])).body.result;
  // Each replica runs two app threads, and each thread learns of the key on its own: a request
  // lands on either, so the wait covers several requests per replica and through the proxy.
  const targets = [...ports.flatMap((p) => Array(4).fill(`http://127.0.0.1:${p}`)), ...Array(6).fill(proxy)];
  // Keys reach every replica within a second or two; the deadline is for a loaded machine.
  for (const t0 = Date.now(); ; ) {
    const answers = await Promise.all(targets.map((t) => rpc(`${t}/v3/${key}`, 'eth_blockNumber', [])));
    if (answers.every((a) => a.status === 200)) {
      expect(answers.map((a) => a.body.result)).toEqual(targets.map(() => head));
      break;
    }
    expect(Date.now() - t0).toBeLessThan(30_000);
    await sleep(100);
  }

  // WebSocket through the proxy.
  const ws = await WsClient.open(`${proxy.replace('http', 'ws')}/ws/v3/${key}`);
  expect((await ws.call('eth_blockNumber', [])).result).toBe(head);
  ws.ws.close();

  // Polled filters made, polled, expired and uninstalled on any replica, directly and through the proxy.
  await filtersAcrossReplicas({
    anvil: anvil.url,
    ports: ports as number[],
    proxy,
    key,
    otherKey: primaryKey,
    metricsPorts: metricsPorts as number[],
    pollsOn: (p) => callsOn(p, 'eth_getFilterChanges'),
  });
  head = (await rpc(`http://127.0.0.1:${ports[0]}/v3/${key}`, 'eth_blockNumber', [])).body.result;

  // SIGKILL of replica 1 under load.
  const url = `${proxy}/v3/${key}`;
  let l = load(url, 4);
  await sleep(500); // the clients' calls under way on every replica
  const inFlightAtKill = l.inFlight;
  const killedAt = Date.now();
  await replicas[1]?.stop('SIGKILL');
  await sleep(4000);
  await l.stop();
  expect(l.ok).toBeGreaterThan(0);
  // At most the calls in flight when it died failed, and none after the proxy's fail_timeout (2 s).
  expect(l.failures.length).toBeLessThanOrEqual(inFlightAtKill);
  expect(l.failures.filter((f) => f.at > killedAt + 2500)).toEqual([]);

  // Restarted and taken back: the proxy sends it calls again.
  await start(1);
  const before = await callsOn(metricsPorts[1] as number);
  l = load(url, 4);
  // Its last failure was marked before it restarted, so within the proxy's fail_timeout (2 s) of
  // this load it gets its share of the round robin again (the deadline is for a loaded machine).
  const loadFrom = Date.now();
  while ((await callsOn(metricsPorts[1] as number)) <= before) {
    expect(Date.now() - loadFrom).toBeLessThan(30_000);
    await sleep(100);
  }
  await sleep(300); // calls go on succeeding with it back in the round robin
  await l.stop();
  expect(l.failures).toEqual([]);

  // Rolling restart under load: SIGTERM (drain, exit 0), start again, wait healthy, next.
  l = load(url, 4);
  for (const i of [0, 1, 2]) {
    expect(await replicas[i]?.stop('SIGTERM')).toBe(0);
    await start(i);
  }
  await sleep(1000);
  await l.stop();
  expect(l.failures).toEqual([]);
  expect(l.ok).toBeGreaterThan(100);

  // A replica restarted and stopped right after its first /health 200: exit 0, a clean stop.
  expect(await replicas[1]?.stop('SIGTERM')).toBe(0);
  const again = spawn(
    process.execPath,
    [join(repoRoot(), 'packages/cli/bin/node-cli.js'), 'serve', '--datadir', dirs[1] as string, ...args(1)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  watchLog(again);
  let out = '';
  again.stdout.on('data', (d: Buffer) => (out += d.toString()));
  again.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => again.on('exit', (code) => r(code)));
  cleanups.push(async () => {
    again.kill('SIGKILL');
    await exited;
  });
  await healthy(ports[1] as number);
  again.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(out).toContain('stopped cleanly');
  // The proxy still answers from the other two.
  expect((await rpc(url, 'eth_blockNumber', [])).body.result).toBe(head);
});
