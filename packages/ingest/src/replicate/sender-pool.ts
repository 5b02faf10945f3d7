// Sender recovery off the replica's thread: libsecp256k1's recovery of every signed transaction
// is most of decoding a replicated block (a mainnet-shaped block: ~240 of them, ~25 ms), and the
// replica's one thread is what bounds replication. A range of blocks hands its transactions'
// signing parts to one worker thread (sender-worker.ts) and verifies and writes the blocks before
// it meanwhile. The senders are the same bytes recoverSender gives on the caller's thread; a
// signature that does not recover is recovered again there, so the error is the same too; a
// worker that fails leaves the recovery to the caller's thread.
import { Worker } from 'node:worker_threads';
import { recoverSender } from './senders.js';
import type { SigningParts } from './senders.js';

/** One signing part on the wire: hash (32), r ++ s (64), recovery id (1). */
export const PART_BYTES = 97;
/** One sender on the wire: recovered (1 byte), address (20). */
export const SENDER_BYTES = 21;

interface Waiting {
  parts: SigningParts[];
  resolve: (senders: (Uint8Array | undefined)[]) => void;
}

export class SenderPool {
  private worker: Worker | undefined;
  private broken = false;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();

  /** Each part's sender; undefined where the signature does not recover. */
  recover(parts: SigningParts[]): Promise<(Uint8Array | undefined)[]> {
    const w = this.start();
    if (w === undefined) return Promise.resolve(parts.map(inline));
    const id = this.nextId++;
    const wire = new Uint8Array(parts.length * PART_BYTES);
    parts.forEach((p, i) => {
      wire.set(p.msgHash, i * PART_BYTES);
      wire.set(p.sig, i * PART_BYTES + 32);
      wire[i * PART_BYTES + 96] = p.recovery;
    });
    return new Promise((resolve) => {
      this.waiting.set(id, { parts, resolve });
      w.ref();
      w.postMessage({ id, parts: wire }, [wire.buffer]);
    });
  }

  private start(): Worker | undefined {
    if (this.broken) return undefined;
    if (this.worker !== undefined) return this.worker;
    try {
      const w = new Worker(new URL('./sender-worker.js', import.meta.url));
      w.on('message', (m: { id: number; out: Uint8Array }) => {
        const job = this.waiting.get(m.id);
        if (job === undefined) return;
        this.waiting.delete(m.id);
        if (this.waiting.size === 0) w.unref();
        job.resolve(
          job.parts.map((_, i) =>
            m.out[i * SENDER_BYTES] === 1 ? m.out.slice(i * SENDER_BYTES + 1, (i + 1) * SENDER_BYTES) : undefined,
          ),
        );
      });
      // A failed worker: what it had is recovered here, and so is everything after.
      const fail = (): void => {
        this.broken = true;
        this.worker = undefined;
        for (const job of this.waiting.values()) job.resolve(job.parts.map(inline));
        this.waiting.clear();
      };
      w.on('error', fail);
      w.on('exit', fail);
      w.unref();
      this.worker = w;
      return w;
    } catch {
      this.broken = true;
      return undefined;
    }
  }
}

function inline(p: SigningParts): Uint8Array | undefined {
  try {
    return recoverSender(p);
  } catch {
    return undefined;
  }
}

/** The process's pool (one worker, started on first use). */
export const senderPool = new SenderPool();
