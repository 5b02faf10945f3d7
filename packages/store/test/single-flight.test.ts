// SingleFlight (core): one load per key while it is in progress, shared by every caller;
// forgotten when it settles, failures included (not cached, the next call loads again).
import { SingleFlight } from '@chainnode/core';

describe('SingleFlight', () => {
  test('concurrent callers of a key share one load and one result object', async () => {
    const sf = new SingleFlight<string, { v: number }>();
    let loads = 0;
    const load = async (): Promise<{ v: number }> => {
      loads++;
      await new Promise((r) => setTimeout(r, 5));
      return { v: loads };
    };
    const results = await Promise.all(Array.from({ length: 200 }, () => sf.run('a', load)));
    expect(loads).toBe(1);
    expect(new Set(results).size).toBe(1);
    expect(sf.size).toBe(0);
    // Settled: a later call loads again (caching is the caller's business).
    expect((await sf.run('a', load)).v).toBe(2);
    // Different keys load separately.
    await Promise.all([sf.run('x', load), sf.run('y', load), sf.run('x', load)]);
    expect(loads).toBe(4);
  });

  test('a failed load fails every waiter and is not remembered', async () => {
    const sf = new SingleFlight<number, string>();
    let calls = 0;
    const failing = async (): Promise<string> => {
      calls++;
      await Promise.resolve();
      throw new Error('disk on fire');
    };
    const all = await Promise.allSettled(Array.from({ length: 10 }, () => sf.run(1, failing)));
    expect(calls).toBe(1);
    expect(all.every((r) => r.status === 'rejected' && (r.reason as Error).message === 'disk on fire')).toBe(true);
    expect(sf.size).toBe(0);
    expect(await sf.run(1, async () => 'ok')).toBe('ok');
  });
});
