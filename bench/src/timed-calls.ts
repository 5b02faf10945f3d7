// One call at a time through an rpc service's handle(), each timed: wall time and this process's
// CPU (ms), and its reply parsed for the caller's check. What the in-process benches share.
import type { RpcServiceApi } from '@chainnode/rpc';

export interface TimedCalls {
  times: number[];
  cpu: number[];
}

export async function timeCalls(
  svc: RpcServiceApi,
  bodies: readonly string[],
  check: (i: number, reply: { result?: unknown; error?: unknown }) => void,
): Promise<TimedCalls> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < bodies.length; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r = await svc.handle(bodies[i] as string);
    const c = process.cpuUsage(c0);
    times.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
    check(i, JSON.parse(r.body ?? '') as { result?: unknown; error?: unknown });
  }
  return { times, cpu };
}
