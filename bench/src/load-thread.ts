// The varied load client (load.ts rawOnce / rawLoadVaried) in a worker thread of its own.
//
// Why: the varied bench's process holds the chain model, every mix's bodies and both servers'
// reply digests (hundreds of MB). Run in that isolate, the client's garbage collections walk all
// of it, and every pause stops all 64 connections at once: measured on random hashes-only blocks,
// neither the server (115% of 2 cores) nor the client (54%) was busy, and the same client in a
// small process drove the same server 35% faster. A worker has its own isolate and heap: it holds
// only the bodies and digests of the run at hand, and the main thread idles while it runs.
//
// The measured window's edges are posted back as they happen, so `onWindow` (reading a server's
// CPU time) still runs at the edges, in the main thread.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { rawLoadVaried, rawOnce } from './load.js';
import type { OnceResult, VariedResult, VariedSpec } from './load.js';

interface Job {
  loadThreadJob: true;
  once: boolean;
  spec: Omit<VariedSpec, 'onWindow'>;
}

type FromWorker = { edge: 'open' | 'close' } | { result: VariedResult | OnceResult } | { error: string };

/** Structured clone hands a Buffer over as a plain Uint8Array: the same bytes as a Buffer again. */
const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

function run(once: boolean, s: VariedSpec): Promise<VariedResult | OnceResult> {
  const { onWindow, ...spec } = s;
  const job: Job = { loadThreadJob: true, once, spec };
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: job });
    let settled = false;
    w.on('message', (m: FromWorker) => {
      if ('edge' in m) onWindow?.(m.edge);
      else {
        settled = true;
        if ('error' in m) reject(new Error(`load thread: ${m.error}`));
        else {
          // Structured clone hands a Buffer over as a plain Uint8Array: make it a Buffer again.
          const r = m.result;
          if ('digests' in r) r.digests = asBuffer(r.digests);
          resolve(r);
        }
      }
    });
    w.on('error', (err) => {
      settled = true;
      reject(err);
    });
    w.on('exit', (code) => {
      if (!settled) reject(new Error(`load thread exited with code ${code} before its result`));
    });
  });
}

/** rawOnce (the cold pass) in a worker thread. */
export function rawOnceThread(s: VariedSpec): Promise<OnceResult> {
  return run(true, s) as Promise<OnceResult>;
}

/** rawLoadVaried (the warm, checked load) in a worker thread. */
export function rawLoadVariedThread(s: VariedSpec): Promise<VariedResult> {
  return run(false, s) as Promise<VariedResult>;
}

if (!isMainThread && (workerData as Partial<Job> | null)?.loadThreadJob === true) {
  const job = workerData as Job;
  const port = parentPort as NonNullable<typeof parentPort>;
  const spec: VariedSpec = {
    ...job.spec,
    ...(job.spec.expected !== undefined ? { expected: asBuffer(job.spec.expected) } : {}),
    onWindow: (edge) => port.postMessage({ edge } satisfies FromWorker),
  };
  (job.once ? rawOnce(spec) : rawLoadVaried(spec)).then(
    (result) => port.postMessage({ result } satisfies FromWorker),
    (err: unknown) =>
      port.postMessage({ error: err instanceof Error ? err.message : String(err) } satisfies FromWorker),
  );
}
