// What identifies a benchmark run, printed first by every bench entry point: the date and time
// (UTC), the commit measured (with "+dirty" when the work tree differs from it), and the host:
// CPU model and count, memory, Node version and the 1-minute load average at the start. The
// figures in docs/performance.md are quoted with exactly these.
import { execFileSync } from 'node:child_process';
import { cpus, hostname, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

/** The short commit of this checkout, "+dirty" when tracked files differ; "no git" outside a checkout. */
export function commitOf(dir = REPO): string {
  try {
    const git = (...args: string[]): string =>
      execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}+dirty`;
  } catch {
    return 'no git';
  }
}

/** One line: `<bench>: <date> UTC, commit <c>, host <name> (<n> x <cpu>, <mem> GiB, node <v>), load <l>`. */
export function runRecord(bench: string, now = new Date()): string {
  const cpu = cpus();
  const model = (cpu[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim();
  const mem = (totalmem() / 2 ** 30).toFixed(0);
  const date = now.toISOString().slice(0, 16).replace('T', ' ');
  return (
    `${bench}: ${date} UTC, commit ${commitOf()}, host ${hostname()} ` +
    `(${cpu.length} x ${model}, ${mem} GiB, node ${process.version}), load ${(loadavg()[0] ?? 0).toFixed(2)}`
  );
}

/** Prints the run record on stdout, where the bench's results follow. */
export function printRunRecord(bench: string): void {
  process.stdout.write(`${runRecord(bench)}\n`);
}
