// Tests are TypeScript compiled by `tsc -b` (the same compiler and strict settings as the
// product, so a type error fails `npm test` before jest starts); jest runs the emitted ESM.
export default {
  testEnvironment: 'node',
  transform: {},
  testMatch: [
    '<rootDir>/packages/*/dist/test/**/*.test.js',
    '<rootDir>/scripts/dist/test/**/*.test.js',
    '<rootDir>/bench/dist/test/**/*.test.js',
  ],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 600_000,
  // Three workers on the 2-core CI machine: most long suites wait on processes they started
  // (servers, replicas, anvil) for much of their time, and a third worker runs a suite in that
  // idle CPU. Clean-clone runs (2026-12-02): jest 849-885 s with 3 workers against 931-952 s with
  // 2 at the same tests, each suite taking longer by itself (docs/development.md).
  maxWorkers: 3,
  verbose: true,
  reporters: ['default', '<rootDir>/jest.summary-reporter.js'],
  testSequencer: '<rootDir>/jest.sequencer.js',
};
