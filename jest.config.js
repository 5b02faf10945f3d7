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
  maxWorkers: 2,
  verbose: true,
  reporters: ['default', '<rootDir>/jest.summary-reporter.js'],
  testSequencer: '<rootDir>/jest.sequencer.js',
};
