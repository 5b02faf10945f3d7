// Lanes: at most `count` holders, FIFO; a holder waiting outside (offloaded work) lets the next in.
import { Lanes } from '../src/lanes.js';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Lanes', () => {
  test('at most count at once, in arrival order', async () => {
    const lanes = new Lanes(2);
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        lanes.run(async () => {
          active++;
          peak = Math.max(peak, active);
          order.push(i);
          await tick(5);
          active--;
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(lanes.queued).toBe(0);
  });

  test('outside(): the lane is free while the holder waits, and taken back after', async () => {
    const lanes = new Lanes(1);
    const log: string[] = [];
    const a = lanes.run(async () => {
      log.push('a in');
      await lanes.outside(async () => {
        log.push('a out');
        await tick(20);
      });
      log.push('a back');
    });
    const b = lanes.run(async () => {
      log.push('b in');
      await tick(40);
      log.push('b done');
    });
    await Promise.all([a, b]);
    // b ran while a waited outside; a came back only once b had left the single lane.
    expect(log).toEqual(['a in', 'a out', 'b in', 'b done', 'a back']);
  });
});
