// The sender-recovery thread of SenderPool (sender-pool.ts): a batch of signing parts in (each
// PART_BYTES: the 32-byte signing hash, r ++ s, the recovery id), a batch of senders out (each
// SENDER_BYTES: 1 when recovered, then the 20-byte address; 0 when the signature does not recover).
import { parentPort } from 'node:worker_threads';
import { PART_BYTES, SENDER_BYTES } from './sender-pool.js';
import { recoverSender } from './senders.js';

parentPort?.on('message', (m: { id: number; parts: Uint8Array }) => {
  const n = m.parts.length / PART_BYTES;
  const out = new Uint8Array(n * SENDER_BYTES);
  for (let i = 0; i < n; i++) {
    const at = i * PART_BYTES;
    try {
      const sender = recoverSender({
        msgHash: m.parts.subarray(at, at + 32),
        sig: m.parts.subarray(at + 32, at + 96),
        recovery: m.parts[at + 96] as number,
      });
      out[i * SENDER_BYTES] = 1;
      out.set(sender, i * SENDER_BYTES + 1);
    } catch {
      // left 0: the caller recovers it again on its own thread for the error's text
    }
  }
  parentPort?.postMessage({ id: m.id, out }, [out.buffer]);
});
