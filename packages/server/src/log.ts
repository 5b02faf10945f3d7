// The process log of `serve` (docs/monitoring.md#logs): one line per event on stderr, through pino.
// `json` (the default when neither stderr nor stdout is a terminal): one JSON object per line with
// `level`, `time` (ISO 8601), `component` (serve, ledger, follow, dashboard, access…), `network`
// (the network's name, null for the process or the one network of `--datadir`) and `msg`. `text`
// (the default when either is a terminal): `serve: <msg>` lines as before. Below `level`, nothing
// is written.
//
// Whatever the caller passes, a line is scrubbed before it is written (redact()): API keys (32 hex
// digits standing alone, and the segment after /v3/), admin tokens (cna_…), HTTP basic
// credentials and the user part of URLs (redis://:password@…) become [redacted].
import { pino } from 'pino';
import type { Logger as Pino } from 'pino';

export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogOptions {
  format: LogFormat;
  level: LogLevel;
}

/**
 * `text` when stderr or stdout is a terminal (someone reads the process's lines: the log on
 * stderr and the banner on stdout), `json` otherwise (a log collector reads them).
 */
export function defaultLogFormat(): LogFormat {
  return process.stderr.isTTY === true || process.stdout.isTTY === true ? 'text' : 'json';
}

const REDACTIONS: [RegExp, string][] = [
  [/(\/v3\/)[^/?\s"]+/g, '$1[redacted]'],
  [/(?<![0-9a-zA-Z])[0-9a-fA-F]{32}(?![0-9a-zA-Z])/g, '[redacted]'],
  [/cna_[A-Za-z0-9_-]{16,}/g, '[redacted]'],
  [/(Basic|Bearer)\s+[A-Za-z0-9+/=._-]{8,}/gi, '$1 [redacted]'],
  [/(\/\/)[^/@\s"]*@/g, '$1[redacted]@'],
];

/** `s` with every piece of key material replaced by [redacted]. */
export function redact(s: string): string {
  let out = s;
  for (const [re, by] of REDACTIONS) out = out.replace(re, by);
  return out;
}

/** A field of a log line: plain values, lists and objects of them. */
export type LogValue = string | number | boolean | null | readonly LogValue[] | { readonly [k: string]: LogValue };
export type LogFields = Readonly<Record<string, LogValue>>;

/** One component's lines (of one network, or of the process). */
export interface Log {
  (msg: string): void;
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  /**
   * A line that already names its network and component in its text (`network x: follow: …`):
   * written as is in text, with this log's component and network fields in JSON.
   */
  line(level: Exclude<LogLevel, 'silent'>, msg: string): void;
  /**
   * An `info` line with fields (an access-log record, the listening banner), its fields scrubbed
   * as the message is; in text, `key=value` after the message.
   */
  record(msg: string, fields: LogFields): void;
  /** The same log for another component or network. */
  child(component: string, network?: string | null): Log;
}

const RANK: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50, silent: 100 };

function scrub(v: LogValue): LogValue {
  if (typeof v === 'string') return redact(v);
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(scrub);
  return scrubFields(v as LogFields);
}

function scrubFields(fields: LogFields): Record<string, LogValue> {
  const out: Record<string, LogValue> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = scrub(v);
  return out;
}

/** The process's log; `write` replaces stderr (tests). */
export function createLog(opts: LogOptions, write?: (line: string) => void): Log {
  const sink = write ?? ((line: string) => process.stderr.write(line));
  let base: Pino | undefined;
  if (opts.format === 'json') {
    base = pino(
      {
        level: opts.level,
        base: null,
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      write === undefined ? pino.destination({ fd: 2, sync: true }) : { write: sink },
    );
  }
  const make = (component: string, network: string | null): Log => {
    const child = base?.child({ component, network });
    const emit = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields, prefixed = false) => {
      if (RANK[level] < RANK[opts.level]) return;
      const text = redact(msg);
      if (child !== undefined) {
        if (fields === undefined) child[level](text);
        else child[level](scrubFields(fields), text);
        return;
      }
      const where = network === null || prefixed ? '' : `network ${network}: `;
      const what = component === 'serve' || prefixed ? '' : `${component}: `;
      const extra =
        fields === undefined
          ? ''
          : ` ${Object.entries(scrubFields(fields))
              .map(([k, v]) => `${k}=${v !== null && typeof v === 'object' ? JSON.stringify(v) : v}`)
              .join(' ')}`;
      const lvl = level === 'info' ? '' : `${level}: `;
      sink(`serve: ${lvl}${where}${what}${text}${extra}\n`);
    };
    const log = ((msg: string) => emit('info', msg)) as Log;
    log.debug = (m) => emit('debug', m);
    log.info = (m) => emit('info', m);
    log.warn = (m) => emit('warn', m);
    log.error = (m) => emit('error', m);
    log.record = (m, f) => emit('info', m, f);
    log.line = (level, m) => emit(level, m, undefined, true);
    log.child = (c, n) => make(c, n === undefined ? network : n);
    return log;
  };
  return make('serve', null);
}
