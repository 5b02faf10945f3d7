// ReplyBudget: the sum of every connection's buffered reply bytes, over/under the process
// budget with resumption on drain, stalled connections and the largest stalled holders.
import { ReplyBudget } from '../src/reply-budget.js';

describe('ReplyBudget', () => {
  test('sums connections, signals over budget, resumes waiters once bytes drain under it', () => {
    const now = 0;
    const b = new ReplyBudget<string>(100, () => now);
    b.update('a', 60);
    b.update('b', 30);
    expect([b.bytes, b.over]).toEqual([90, false]);
    b.update('b', 50);
    expect([b.bytes, b.over]).toEqual([110, true]);
    let resumed = 0;
    const resume = (): void => {
      resumed++;
    };
    b.whenUnder(resume);
    b.whenUnder(resume); // registered once
    b.update('a', 55); // drains, still over
    expect(resumed).toBe(0);
    b.update('a', 40); // under now
    expect([b.bytes, b.over, resumed]).toEqual([90, false, 1]);
    b.update('a', 10);
    expect(resumed).toBe(1); // called once only
    b.release('a');
    b.release('b');
    expect([b.bytes, b.holders()]).toEqual([0, []]);
  });

  test('stalled: connections whose buffered amount has not gone down for a while', () => {
    let now = 1000;
    const b = new ReplyBudget<string>(1e9, () => now);
    b.update('reader', 500);
    b.update('stuck', 500);
    now += 5000;
    b.update('reader', 200); // progress
    b.update('stuck', 800); // grew: no progress
    now += 2000;
    expect(b.stalled(6000)).toEqual(['stuck']);
    expect(b.stalled(1000).sort()).toEqual(['reader', 'stuck']);
    expect(b.stalledLargestFirst(6000)).toEqual(['stuck']);
    b.update('small', 100);
    now += 10_000;
    expect(b.stalledLargestFirst(6000)).toEqual(['stuck', 'reader', 'small']);
  });
});
