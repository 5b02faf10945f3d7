// Shared by offload.test.ts and its worker script (offload-worker.ts): how a test tells the
// worker's fake store to misbehave (first byte of the first filter address) and the channel
// gated calls wait on.
export const GATE_CHANNEL = 'offload-test-gate';
export const CRASH = 0xde;
export const STUCK = 0x5c;
export const GATED = 0x9a;

/** An address whose first byte selects the behaviour. */
export function addressFor(first: number): string {
  return `0x${first.toString(16).padStart(2, '0')}${'11'.repeat(19)}`;
}
