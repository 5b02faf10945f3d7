// Load generators for bench/http.ts. Every generator is closed-loop (each connection sends its
// next request when the previous answer arrived: no pipelining) and checks every answer: a
// figure counts only answers that are HTTP 200 (or a WebSocket text frame) with exactly the
// expected bytes; anything else is counted and reported, never silently included.
//
// - wrk (Debian's, C, multi-threaded): HTTP, with a Lua script that compares each body.
// - autocannon (JS, in this process): HTTP, `expectBody` counts mismatches.
// - raw (JS, node:net, in this process): HTTP/1.1 keep-alive or WebSocket frames over plain
//   sockets with pre-built request bytes; the same code for both transports, so the WebSocket
//   vs HTTP comparison is not a comparison of two client libraries.
import { execFile, execFileSync } from 'node:child_process';
import { createXXHash128 } from 'hash-wasm';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

export interface LoadResult {
  tool: string;
  rps: number;
  p50: number; // ms
  p99: number; // ms
  ok: number;
  /** Non-200 HTTP answers (or non-text WebSocket frames). */
  bad: number;
  /** 200 answers whose body differs from the expected bytes (JSON-RPC errors included). */
  mismatched: number;
  /** Socket errors / timeouts. */
  errors: number;
}

export interface LoadSpec {
  host: string;
  port: number;
  path: string;
  body: string;
  expected: string;
  connections: number;
  seconds: number;
}

export function haveWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // wrk --version exits 1 after printing its version; only ENOENT means absent.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

const WRK_LUA = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  wrk.method = "POST"
  wrk.body = os.getenv("BENCH_BODY")
  wrk.headers["Content-Type"] = "application/json"
  expected = os.getenv("BENCH_EXPECT")
  bad = 0; mism = 0; ok = 0
end
function response(status, headers, body)
  if status ~= 200 then bad = bad + 1
  elseif body ~= expected then mism = mism + 1
  else ok = ok + 1 end
end
function done(summary, latency, requests)
  local b, m, o = 0, 0, 0
  for _, t in ipairs(threads) do b = b + t:get("bad"); m = m + t:get("mism"); o = o + t:get("ok") end
  local e = summary.errors
  io.write(string.format("BENCH %d %d %d %d %.3f %.3f %.3f\\n", o, b, m,
    e.connect + e.read + e.write + e.timeout, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
`;

/** wrk with `threads` threads (1 leaves the other core to the server). */
export async function wrkLoad(s: LoadSpec, threads = 1): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const script = join(dir, 'post.lua');
    writeFileSync(script, WRK_LUA);
    const url = `http://${s.host}:${s.port}${s.path}`;
    const out = await new Promise<string>((resolve, reject) => {
      execFile(
        'wrk',
        [
          '-t',
          String(threads),
          '-c',
          String(s.connections),
          '-d',
          `${s.seconds}s`,
          '--timeout',
          '10s',
          '-s',
          script,
          url,
        ],
        { env: { ...process.env, BENCH_BODY: s.body, BENCH_EXPECT: s.expected }, maxBuffer: 1 << 20 },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      );
    });
    const m = /BENCH (\d+) (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)/.exec(out);
    if (!m) throw new Error(`wrk printed no result:\n${out}`);
    const [ok, bad, mismatched, errors, secs, p50, p99] = m.slice(1).map(Number) as number[];
    return {
      tool: `wrk -t${threads}`,
      rps: (ok as number) / (secs as number),
      p50: p50 as number,
      p99: p99 as number,
      ok: ok as number,
      bad: bad as number,
      mismatched: mismatched as number,
      errors: errors as number,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface AutocannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  '2xx': number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;

export async function autocannonLoad(s: LoadSpec): Promise<LoadResult> {
  const autocannon = require('autocannon') as Autocannon;
  const r = await autocannon({
    url: `http://${s.host}:${s.port}${s.path}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: s.body,
    expectBody: s.expected,
    connections: s.connections,
    duration: s.seconds,
  });
  const ok = r['2xx'] - r.mismatches;
  return {
    tool: 'autocannon',
    rps: ok / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok,
    bad: r.non2xx,
    mismatched: r.mismatches,
    errors: r.errors + r.timeouts,
  };
}

/** One connection of the raw client: sends `request`, parses one answer, repeats. */
class RawConn {
  private buf: Buffer = Buffer.alloc(0);
  private t0 = 0;
  constructor(
    private readonly sock: Socket,
    private readonly kind: 'http' | 'ws',
    private readonly request: Buffer,
    private readonly expected: Buffer,
    private readonly onAnswer: (ms: number, verdict: 'ok' | 'bad' | 'mismatched') => boolean,
  ) {
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => this.data(d));
  }

  send(): void {
    this.t0 = performance.now();
    this.sock.write(this.request);
  }

  private data(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    for (;;) {
      const got = this.kind === 'http' ? this.httpAnswer() : this.wsAnswer();
      if (got === undefined) return;
      if (got === 'skip') continue;
      if (this.onAnswer(performance.now() - this.t0, got)) this.send();
    }
  }

  private httpAnswer(): 'ok' | 'bad' | 'mismatched' | undefined {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = this.buf.subarray(0, end).toString('latin1');
    const m = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!m) throw new Error('raw http client: answer without Content-Length');
    const len = Number(m[1]);
    if (this.buf.length < end + 4 + len) return undefined;
    const body = this.buf.subarray(end + 4, end + 4 + len);
    this.buf = this.buf.subarray(end + 4 + len);
    if (!head.startsWith('HTTP/1.1 200')) return 'bad';
    return body.equals(this.expected) ? 'ok' : 'mismatched';
  }

  private wsAnswer(): 'ok' | 'bad' | 'mismatched' | 'skip' | undefined {
    const b = this.buf;
    if (b.length < 2) return undefined;
    const opcode = (b[0] as number) & 0x0f;
    let len = (b[1] as number) & 0x7f;
    let off = 2;
    if (len === 126) {
      if (b.length < 4) return undefined;
      len = b.readUInt16BE(2);
      off = 4;
    } else if (len === 127) {
      if (b.length < 10) return undefined;
      len = Number(b.readBigUInt64BE(2));
      off = 10;
    }
    if (b.length < off + len) return undefined;
    const payload = b.subarray(off, off + len);
    this.buf = b.subarray(off + len);
    if (opcode === 0x9 || opcode === 0xa) return 'skip'; // ping/pong: not an answer
    if (opcode !== 0x1 || ((b[0] as number) & 0x80) === 0) return 'bad';
    return payload.equals(this.expected) ? 'ok' : 'mismatched';
  }
}

/** A masked client text frame (mask 0: XOR is the identity; servers must accept any mask). */
function wsFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const n = payload.length;
  const head =
    n < 126 ? Buffer.from([0x81, 0x80 | n]) : n < 65536 ? Buffer.from([0x81, 0x80 | 126, n >> 8, n & 0xff]) : undefined;
  if (!head) throw new Error('raw ws client: body too large');
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number) * 1000) / 1000;
}

async function open(s: LoadSpec, kind: 'http' | 'ws'): Promise<Socket> {
  const sock = connect({ host: s.host, port: s.port });
  await new Promise<void>((res, rej) => {
    sock.once('connect', res);
    sock.once('error', rej);
  });
  if (kind === 'ws') {
    sock.write(
      `GET ${s.path} HTTP/1.1\r\nHost: ${s.host}:${s.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await new Promise<void>((res, rej) => {
      let head = '';
      const onData = (d: Buffer): void => {
        head += d.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        sock.off('data', onData);
        if (!head.startsWith('HTTP/1.1 101')) rej(new Error(`websocket upgrade refused: ${head.split('\r\n')[0]}`));
        else if (head.length > end + 4) rej(new Error('raw ws client: data right after the upgrade'));
        else res();
      };
      sock.on('data', onData);
    });
  }
  return sock;
}

/** The raw closed-loop client over `connections` sockets: 2 s warm-up, then `seconds` measured. */
export async function rawLoad(s: LoadSpec, kind: 'http' | 'ws'): Promise<LoadResult> {
  const request =
    kind === 'ws'
      ? wsFrame(s.body)
      : Buffer.from(
          `POST ${s.path} HTTP/1.1\r\nHost: ${s.host}:${s.port}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(s.body)}\r\n\r\n${s.body}`,
        );
  const expected = Buffer.from(s.expected);
  const sockets = await Promise.all(Array.from({ length: s.connections }, () => open(s, kind)));
  let measuring = false;
  let running = true;
  let errors = 0;
  const lat = new Float64Array(1 << 24);
  let n = 0;
  const counts = { ok: 0, bad: 0, mismatched: 0 };
  const conns = sockets.map(
    (sock) =>
      new RawConn(sock, kind, request, expected, (ms, verdict) => {
        if (measuring) {
          counts[verdict]++;
          if (verdict === 'ok' && n < lat.length) lat[n++] = ms;
        }
        return running;
      }),
  );
  for (const sock of sockets) sock.on('error', () => errors++);
  for (const c of conns) c.send();
  await new Promise((r) => setTimeout(r, 2000));
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, s.seconds * 1000));
  measuring = false;
  const secs = (performance.now() - t0) / 1000;
  running = false;
  for (const sock of sockets) sock.destroy();
  const sorted = lat.subarray(0, n).sort();
  return {
    tool: `raw-${kind}`,
    rps: counts.ok / secs,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    ...counts,
    errors,
  };
}

export interface VariedSpec {
  host: string;
  port: number;
  path: string;
  /** Request bodies, sent in turn (each connection takes the next one). */
  bodies: string[];
  /**
   * The digest of each body's checked reply (DIGEST bytes per body, in body order): an answer is
   * right when its bytes hash to it. A digest per body instead of the reply text keeps the client's
   * memory bounded (20,000 bodies of up to ~1 MB each, two servers).
   */
  expected?: Buffer;
  connections: number;
  seconds: number;
  /** Warm-up seconds before measuring (default 2). */
  warmup?: number;
  /** Called when the measured window opens and when it closes (e.g. to read the server's CPU time). */
  onWindow?: (edge: 'open' | 'close') => void;
}

export interface VariedResult extends LoadResult {
  /** Wrong replies that were JSON-RPC -32005 (shed / limited). */
  shed: number;
  /** Distinct bodies answered during the measured window. */
  distinct: number;
  /** Client CPU spent hashing and comparing answers (ms per measured second). */
  checkMsPerSec: number;
}

export interface OnceResult {
  secs: number;
  rps: number;
  p50: number;
  p99: number;
  /** Non-200 answers and socket errors. */
  bad: number;
  errors: number;
  /** The digest of each body's answer (DIGEST bytes per body; zeros where none came). */
  digests: Buffer;
}

/**
 * The digest an answer is compared by: XXH3-128 (hash-wasm). It only has to tell the checked
 * reply's exact bytes from any other reply (nobody here crafts collisions), and the client must
 * not be what limits a server: on a 200 KB getLogs answer it takes ~36 us against SHA-256's
 * ~113 us (crypto.hash, with the CPU's SHA extensions), so the load client keeps up with both
 * servers on the big answers.
 */
export const DIGEST = 16;
const xxh128 = await createXXHash128();
export const digest = (b: Uint8Array): Buffer => {
  const d = xxh128.init().update(b).digest('binary');
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
};

const SHED = Buffer.from('"code":-32005');

/**
 * The raw HTTP closed-loop client over `connections` keep-alive sockets with a different body per
 * request. `once`: every body exactly once (the cold pass), recording each answer's digest.
 * Otherwise bodies are taken in turn from the list (a shared cursor) for warm-up + `seconds`, and
 * each answer's digest is compared with its own body's expected one.
 */
async function rawVaried(s: VariedSpec, once: boolean): Promise<VariedResult & { digests: Buffer; secs: number }> {
  const reqs = s.bodies.map((body) =>
    Buffer.from(
      `POST ${s.path} HTTP/1.1\r\nHost: ${s.host}:${s.port}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    ),
  );
  const exp = s.expected;
  const digests = once ? Buffer.alloc(reqs.length * DIGEST) : Buffer.alloc(0);
  const conns = Math.min(s.connections, reqs.length);
  const sockets = await Promise.all(
    Array.from({ length: conns }, () => open({ ...s, body: '', expected: '' }, 'http')),
  );
  let cursor = 0;
  let measuring = once;
  let running = true;
  let errors = 0;
  let shed = 0;
  let checkMs = 0;
  let pending = reqs.length;
  let allDone: () => void = () => {};
  const finished = new Promise<void>((r) => (allDone = r));
  const seen = new Uint8Array(reqs.length);
  const lat = new Float64Array(1 << 23);
  let n = 0;
  const counts = { ok: 0, bad: 0, mismatched: 0 };
  for (const sock of sockets) {
    sock.setNoDelay(true);
    sock.on('error', () => {
      errors++;
      if (once) allDone();
    });
    // The bytes received and not yet consumed: `buf`, plus the chunks after it while an answer
    // is incomplete (joined once it is whole, not on every chunk: a 200 KB answer arrives in
    // several 64 KB reads).
    let buf: Buffer = Buffer.alloc(0);
    let more: Buffer[] = [];
    let moreBytes = 0;
    let need = 0;
    let idx = 0;
    let t0 = 0;
    const send = (): boolean => {
      if (once && cursor === reqs.length) return false;
      idx = cursor;
      cursor = cursor + 1 === reqs.length && !once ? 0 : cursor + 1;
      t0 = performance.now();
      sock.write(reqs[idx] as Buffer);
      return true;
    };
    sock.on('data', (d: Buffer) => {
      if (buf.length === 0) buf = d;
      else {
        more.push(d);
        moreBytes += d.length;
        if (buf.length + moreBytes < need) return;
        buf = Buffer.concat([buf, ...more]);
        more = [];
        moreBytes = 0;
      }
      need = 0;
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const m = /\r\ncontent-length: *(\d+)/i.exec(head);
        if (!m) throw new Error('raw http client: answer without Content-Length');
        const len = Number(m[1]);
        if (buf.length < end + 4 + len) {
          need = end + 4 + len;
          return;
        }
        const body = buf.subarray(end + 4, end + 4 + len);
        buf = buf.subarray(end + 4 + len);
        if (measuring) {
          const now = performance.now();
          const ms = now - t0;
          if (!head.startsWith('HTTP/1.1 200')) counts.bad++;
          else if (once) {
            digest(body).copy(digests, idx * DIGEST);
            counts.ok++;
            if (n < lat.length) lat[n++] = ms;
          } else if (exp !== undefined && digest(body).equals(exp.subarray(idx * DIGEST, idx * DIGEST + DIGEST))) {
            counts.ok++;
            seen[idx] = 1;
            if (n < lat.length) lat[n++] = ms;
          } else {
            counts.mismatched++;
            if (body.includes(SHED)) shed++;
          }
          checkMs += performance.now() - now;
        }
        if (once) {
          if (--pending === 0) allDone();
          if (!send()) return;
        } else if (running) send();
      }
    });
    send();
  }
  let secs: number;
  if (once) {
    const t0 = performance.now();
    await finished;
    secs = (performance.now() - t0) / 1000;
  } else {
    await new Promise((r) => setTimeout(r, (s.warmup ?? 2) * 1000));
    s.onWindow?.('open');
    measuring = true;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, s.seconds * 1000));
    measuring = false;
    s.onWindow?.('close');
    secs = (performance.now() - t0) / 1000;
  }
  running = false;
  for (const sock of sockets) sock.destroy();
  const sorted = lat.subarray(0, n).sort();
  let distinct = 0;
  for (const x of seen) distinct += x;
  return {
    tool: 'raw-http varied',
    rps: counts.ok / secs,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    ...counts,
    errors,
    shed,
    distinct,
    checkMsPerSec: checkMs / secs,
    digests,
    secs,
  };
}

/** Warm load: bodies in turn, each answer checked against its body's expected digest. */
export async function rawLoadVaried(s: VariedSpec): Promise<VariedResult> {
  if (s.expected === undefined || s.expected.length !== s.bodies.length * DIGEST)
    throw new Error(`rawLoadVaried: one ${DIGEST}-byte digest per body`);
  const r = await rawVaried(s, false);
  const { digests: _d, secs: _s, ...rest } = r;
  return rest;
}

/** Cold pass: every body once over the same sockets; the digest of every answer. */
export async function rawOnce(s: VariedSpec): Promise<OnceResult> {
  const r = await rawVaried(s, true);
  return { secs: r.secs, rps: r.ok / r.secs, p50: r.p50, p99: r.p99, bad: r.bad, errors: r.errors, digests: r.digests };
}
