// Longest first (jest's times of the previous run, else the times listed below for the long
// suites, then the rest in jest's order: largest file first), with two suites put in front:
// chain-execute asks for the fixture chain's shared import (testkit's preparedDatadir) at once,
// so the import runs on one worker while another regenerates the fixtures, the longest suite that
// needs no imported chain. Otherwise the workers start with suites that need the import and sit
// idle until it is done. The third worker (jest.config.js) starts the longest suite left, which
// waits for the import: a heavy suite there instead slowed the import every later suite waits
// for (docs/development.md).
import TestSequencer from '@jest/test-sequencer';

const FIRST = ['scripts/dist/test/chain-execute.test.js', 'scripts/dist/test/fixtures-determinism.test.js'];

// Seconds the suites of 10 s or more took in a clean-clone run on 2 cores (2026-12-01): what the
// order falls back on for a suite jest has no time of. A fresh clone (CI) has none, and jest then
// orders by file size, so long suites started late held the run open: 1,054 s there against
// 897 s in the next run on the same host, ordered by the first run's times. Any suite not listed
// and not timed follows these, in jest's order.
const KNOWN_SECONDS = {
  'packages/cli/dist/test/follow-replica.test.js': 114,
  'packages/cli/dist/test/join-primary.test.js': 101,
  'packages/cli/dist/test/replicate-primary.test.js': 100,
  'scripts/dist/test/chain-execute.test.js': 81,
  'packages/ingest/dist/test/state-history-reorg.test.js': 71,
  'scripts/dist/test/fixtures-determinism.test.js': 70,
  'packages/cli/dist/test/deployment.test.js': 64,
  'packages/ingest/dist/test/import.test.js': 61,
  'packages/rpc/dist/test/conformance.test.js': 60,
  'bench/dist/test/getlogs.test.js': 56,
  'bench/dist/test/mainnet-shape.test.js': 52,
  'packages/cli/dist/test/replicas-mixed.test.js': 52,
  'packages/cli/dist/test/follow-anvil.test.js': 48,
  'packages/rpc/dist/test/log-rows.test.js': 45,
  'packages/rpc/dist/test/recorded-traces.test.js': 45,
  'packages/cli/dist/test/serve.test.js': 45,
  'packages/rpc/dist/test/raw.test.js': 45,
  'packages/store/dist/test/logs.test.js': 44,
  'packages/rpc/dist/test/state-diff.test.js': 41,
  'packages/cli/dist/test/threads.test.js': 35,
  'packages/cli/dist/test/networks.test.js': 33,
  'packages/cli/dist/test/clients-follow.test.js': 27,
  'packages/cli/dist/test/replicate-op.test.js': 23,
  'packages/cli/dist/test/replicas.test.js': 23,
  'packages/exec/dist/test/exec.test.js': 22,
  'packages/cli/dist/test/start.test.js': 20,
  'packages/rpc/dist/test/trie-window.test.js': 20,
  'packages/server/dist/test/server.test.js': 19,
  'packages/store/dist/test/state-history.test.js': 19,
  'packages/exec/dist/test/frame-tuning.test.js': 19,
  'packages/cli/dist/test/keys-cli.test.js': 18,
  'packages/accounts/dist/test/ledger-leases.test.js': 17,
  'packages/cli/dist/test/replicate-lies.test.js': 17,
  'packages/cli/dist/test/offload-workers.test.js': 17,
  'packages/ingest/dist/test/trace-frames-setting.test.js': 16,
  'bench/dist/test/synth.test.js': 15,
  'packages/store/dist/test/tx-lookup.test.js': 15,
  'packages/cli/dist/test/subscriptions-follow.test.js': 15,
  'packages/rpc/dist/test/cache.test.js': 15,
  'packages/accounts/dist/test/ledger.test.js': 15,
  'packages/cli/dist/test/prometheus.test.js': 14,
  'packages/cli/dist/test/dashboard-browser.test.js': 14,
  'packages/rpc/dist/test/call-vs-proofs.test.js': 13,
  'packages/cli/dist/test/join-anvil.test.js': 12,
  'packages/store/dist/test/state-diff.test.js': 12,
  'packages/store/dist/test/block-json.test.js': 12,
  'packages/rpc/dist/test/offload.test.js': 12,
  'packages/store/dist/test/trie-read.test.js': 12,
  'packages/rpc/dist/test/rpc-compat.test.js': 10,
  'packages/cli/dist/test/startup-signal.test.js': 10,
  'packages/ingest/dist/test/ecrecover.test.js': 10,
  'packages/ingest/dist/test/state-history-absent.test.js': 10,
};

/** The suite's time as jest keeps it from its last run (ms), else the listed one, else undefined. */
function estimate(test) {
  if (test.duration != null) return test.duration;
  const listed = Object.entries(KNOWN_SECONDS).find(([suffix]) => test.path.endsWith(suffix));
  return listed === undefined ? undefined : listed[1] * 1000;
}

export default class ImportFirstSequencer extends TestSequencer {
  async sort(tests) {
    const ordered = [...(await super.sort(tests))];
    const rank = (t) => FIRST.findIndex((f) => t.path.endsWith(f));
    const first = ordered.filter((t) => rank(t) >= 0).sort((a, b) => rank(a) - rank(b));
    const rest = ordered.filter((t) => rank(t) < 0);
    // After those two, the suites that failed in the last run (as jest puts them first), then
    // longest first by time (jest's, else listed), then the untimed, unlisted ones in jest's order.
    const failed = rest.filter((t) => this.hasFailed(t));
    const timed = rest.filter((t) => !this.hasFailed(t) && estimate(t) !== undefined);
    const untimed = rest.filter((t) => !this.hasFailed(t) && estimate(t) === undefined);
    timed.sort((a, b) => estimate(b) - estimate(a));
    return [...first, ...failed, ...timed, ...untimed];
  }
}
