// Jest's order (slowest first from the previous run, else largest file first), with two suites
// put in front so that neither worker waits on the other at the start of a run: chain-execute
// asks for the fixture chain's shared import (testkit's preparedDatadir) at once, so the import
// runs on one worker while the other regenerates the fixtures, the longest suite that needs no
// imported chain. Otherwise both workers start with suites that need the import, and one of
// them sits idle until it is done.
import TestSequencer from '@jest/test-sequencer';

const FIRST = ['scripts/dist/test/chain-execute.test.js', 'scripts/dist/test/fixtures-determinism.test.js'];

export default class ImportFirstSequencer extends TestSequencer {
  async sort(tests) {
    const sorted = [...(await super.sort(tests))];
    const rank = (t) => FIRST.findIndex((f) => t.path.endsWith(f));
    const first = sorted.filter((t) => rank(t) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...first, ...sorted.filter((t) => rank(t) < 0)];
  }
}
