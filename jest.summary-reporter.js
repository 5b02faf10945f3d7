// Prints one plain closing line ("tests: N passed, N failed, N skipped") as the very last line
// of the run (at process exit, after jest's own summary), so CI can read the outcome without
// knowing jest's format.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numTodoTests: todo } = results;
    const line = `\ntests: ${passed} passed, ${failed} failed, ${skipped + todo} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}
