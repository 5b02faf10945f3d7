// Waiting for a quiet machine between measured runs: a figure counts when the 1-minute load was
// under 3 while it ran, and a bench's own build (anvil mining, an import) and earlier cases leave
// the load above that for a minute after they stop.
import { loadavg } from 'node:os';

/** Longest wait for the load to fall: past it the run goes on (and its recorded load says so). */
const MAX_WAIT_MS = 180_000;

/** Resolves once the 1-minute load average is below `below` (or after three minutes). */
export async function settleLoad(below: number, log?: (line: string) => void): Promise<void> {
  const until = Date.now() + MAX_WAIT_MS;
  const from = loadavg()[0] as number;
  if (from < below) return;
  while ((loadavg()[0] as number) >= below && Date.now() < until) await new Promise((r) => setTimeout(r, 5_000));
  log?.(`settle: load ${from.toFixed(2)} -> ${(loadavg()[0] as number).toFixed(2)} (below ${below} wanted)`);
}
