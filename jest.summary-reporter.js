// Prints one plain closing line ("tests: N passed, N failed, N skipped") as the very last line
// of the run (at process exit, after jest's own summary), so CI can read the outcome without
// knowing jest's format. Before it, every suite that took longer than its time budget is named
// with its time, slowest first ("over budget: 61 s packages/…/x.test.js"), so a suite that
// grows is seen on the run that made it grow. The budget is 60 s of wall time per suite
// (`SUITE_BUDGET_S` overrides it).
import { relative } from 'node:path';

const DEFAULT_BUDGET_S = 60;

export default class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    const set = Number(process.env.SUITE_BUDGET_S);
    this.budgetMs = (Number.isFinite(set) && set > 0 ? set : DEFAULT_BUDGET_S) * 1000;
    this.slow = [];
  }

  onTestResult(test, result) {
    const { start, end } = result.perfStats;
    const ms = end - start;
    if (start > 0 && ms > this.budgetMs) this.slow.push({ path: relative(this.rootDir, test.path), ms });
  }

  onRunComplete(_contexts, results) {
    const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numTodoTests: todo } = results;
    const budget = `${this.budgetMs / 1000} s`;
    const over = this.slow
      .sort((a, b) => b.ms - a.ms)
      .map(({ path, ms }) => `over budget (${budget}): ${Math.round(ms / 1000)} s ${path}\n`)
      .join('');
    const line = `\n${over}tests: ${passed} passed, ${failed} failed, ${skipped + todo} skipped\n`;
    process.once('exit', () => process.stderr.write(line));
  }
}
