// What an import writes while it runs and when it ends: progress and the upstream's notes on
// stderr, the summary on stdout. In text (`sync`, and `start` in the text log format), `sync: …`
// lines and, on a terminal, a progress bar; in JSON (`start --log-format json`), one `info` line
// of the log's format per event (component `sync`, the facts as fields), so that every line the
// process writes is JSON.
import type { FollowSummary, ImportProgress, ImportSummary } from '@chainnode/ingest';
import { createLog } from '@chainnode/server/settings';
import type { Log, LogFormat } from '@chainnode/server/settings';

export interface SyncReport {
  /** The import's progress (a chain export's). */
  progress: (p: ImportProgress) => void;
  /** A line of the upstream follower's (`--from <URL>`). */
  note: (line: string) => void;
  /** The import stopped (ended or failed): ends the progress bar. */
  done: () => void;
  /** The summary: what was imported, the head and the datadir's size. */
  summary: (s: FollowSummary | ImportSummary, datadir: string, bytesOnDisk: number) => void;
}

function fmtBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}

const rate = (n: number, ms: number): string => (ms > 0 ? (n / (ms / 1000)).toFixed(1) : '-');
const perSecond = (n: number, ms: number): number | null => (ms > 0 ? Number(rate(n, ms)) : null);
const fraction = (p: ImportProgress): number => (p.bytesTotal > 0 ? p.bytesRead / p.bytesTotal : 1);
const percent = (p: ImportProgress): string => (fraction(p) * 100).toFixed(1);
const hashHex = (s: FollowSummary | ImportSummary): string => `0x${Buffer.from(s.head.hash).toString('hex')}`;

/** Progress lines at most every 5 s (the first at once). */
function throttled(write: (p: ImportProgress) => void): (p: ImportProgress) => void {
  let lastLine = 0;
  return (p) => {
    if (Date.now() - lastLine < 5000) return;
    lastLine = Date.now();
    write(p);
  };
}

/** The report in the given format (text unless the caller's log format is JSON). */
export function syncReport(format: LogFormat = 'text'): SyncReport {
  return format === 'json' ? jsonReport() : textReport();
}

function textReport(): SyncReport {
  const tty = process.stderr.isTTY === true;
  const stats = (p: ImportProgress) =>
    `block ${p.number}  ${p.blocks} blocks  ${p.txs} txs  ${p.logs} logs  ${rate(p.blocks, p.elapsedMs)} blocks/s`;
  const line = throttled((p) => process.stderr.write(`sync: ${percent(p)}%  ${stats(p)}\n`));
  return {
    progress: (p) => {
      if (!tty) return line(p);
      const width = 30;
      const filled = Math.round(fraction(p) * width);
      process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent(p)}%  ${stats(p)}\x1b[K`);
    },
    note: (l) => process.stderr.write(`${l}\n`),
    done: () => {
      if (tty) process.stderr.write('\n');
    },
    summary: (s, datadir, bytesOnDisk) => {
      const secs = (s.elapsedMs / 1000).toFixed(1);
      if (s.blocks === 0) {
        process.stdout.write(`sync: already at block ${s.head.number} (${hashHex(s)}); nothing to import\n`);
      } else {
        process.stdout.write(
          `sync: imported blocks ${s.startNumber + 1n}..${s.head.number} (${s.blocks} blocks, ${s.txs} txs, ${s.logs} logs) ` +
            `in ${secs}s: ${rate(s.blocks, s.elapsedMs)} blocks/s, ${rate(s.logs, s.elapsedMs)} logs/s\n`,
        );
      }
      process.stdout.write(
        `sync: head ${s.head.number} ${hashHex(s)}; datadir ${datadir} is ${fmtBytes(bytesOnDisk)} on disk\n`,
      );
    },
  };
}

function jsonReport(): SyncReport {
  // Written whatever --log-level, as the text lines are.
  const err: Log = createLog({ format: 'json', level: 'info' }).child('sync');
  const out: Log = createLog({ format: 'json', level: 'info' }, (l) => process.stdout.write(l)).child('sync');
  return {
    progress: throttled((p) =>
      err.record('importing', {
        percent: Number(percent(p)),
        block: Number(p.number),
        blocks: p.blocks,
        txs: p.txs,
        logs: p.logs,
        blocksPerSecond: perSecond(p.blocks, p.elapsedMs),
      }),
    ),
    note: (l) => err.info(l),
    done: () => {},
    summary: (s, datadir, bytesOnDisk) => {
      const head = { head: Number(s.head.number), hash: hashHex(s) };
      if (s.blocks === 0) out.record('already at the stored head; nothing to import', head);
      else
        out.record('imported blocks', {
          from: Number(s.startNumber + 1n),
          to: Number(s.head.number),
          blocks: s.blocks,
          txs: s.txs,
          logs: s.logs,
          seconds: Number((s.elapsedMs / 1000).toFixed(1)),
          blocksPerSecond: perSecond(s.blocks, s.elapsedMs),
          logsPerSecond: perSecond(s.logs, s.elapsedMs),
        });
      out.record('head', { ...head, datadir, bytesOnDisk });
    },
  };
}
