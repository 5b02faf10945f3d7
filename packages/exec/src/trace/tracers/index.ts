// geth's tracer directory: a tracer by name with its `tracerConfig`, or the struct logger when
// no name is given. A name geth does not register is taken by geth as JavaScript code; this node
// runs no JavaScript: such code is refused, and an unknown name gets the error geth's
// JavaScript engine gives it.
import { TracerConfigError } from '../hooks.js';
import type { TraceBudget, Tracer } from '../hooks.js';
import { CallTracer } from './call.js';
import { PrestateTracer } from './prestate.js';
import { FourByteTracer, MuxTracer, NoopTracer } from './simple.js';
import { StructLogger } from './struct-logger.js';
import type { StructLoggerConfig } from './struct-logger.js';

export interface TracerChoice {
  /** The tracer's name; undefined: the struct logger. */
  tracer?: string;
  /** The tracer's own options (geth's `tracerConfig`), as JSON. */
  tracerConfig?: unknown;
  /** The struct logger's options (the trace config's own members). */
  logger: StructLoggerConfig;
}

/** The tracers geth registers natively that this node serves. */
export const TRACER_NAMES = ['callTracer', 'prestateTracer', '4byteTracer', 'noopTracer', 'muxTracer'] as const;

function record(v: unknown, what: string): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v))
    throw new TracerConfigError(
      `json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go value of type ${what}`,
    );
  return v as Record<string, unknown>;
}

function flag(cfg: Record<string, unknown>, name: string, what: string): boolean {
  const v = cfg[name];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean')
    throw new TracerConfigError(`json: cannot unmarshal ${typeof v} into Go struct field ${what}.${name} of type bool`);
  return v;
}

/** geth's tracers.DefaultDirectory.New (and the struct logger when no tracer is named). */
export function makeTracer(choice: TracerChoice, budget: TraceBudget): Tracer {
  const name = choice.tracer;
  if (name === undefined) return new StructLogger(choice.logger, budget);
  return named(name, choice.tracerConfig, budget);
}

function named(name: string, config: unknown, budget: TraceBudget): Tracer {
  switch (name) {
    case 'callTracer': {
      const c = record(config, 'native.callTracerConfig');
      return new CallTracer(
        { onlyTopCall: flag(c, 'onlyTopCall', 'callTracerConfig'), withLog: flag(c, 'withLog', 'callTracerConfig') },
        budget,
      );
    }
    case 'prestateTracer': {
      const c = record(config, 'native.PrestateTracerConfig');
      const f = (n: string) => flag(c, n, 'PrestateTracerConfig');
      return new PrestateTracer(
        {
          diffMode: f('diffMode'),
          disableCode: f('disableCode'),
          disableStorage: f('disableStorage'),
          includeEmpty: f('includeEmpty'),
        },
        budget,
      );
    }
    case '4byteTracer':
      return new FourByteTracer();
    case 'noopTracer':
      return new NoopTracer();
    case 'muxTracer': {
      const c = record(config, 'map[string]json.RawMessage');
      return new MuxTracer(Object.entries(c).map(([n, cfg]) => [n, named(n, cfg, budget)]));
    }
    default:
      if (/[{}()]|\bfunction\b|=>/.test(name))
        throw new TracerConfigError(
          `JavaScript tracers are not supported by this node; use a native tracer: ${TRACER_NAMES.join(', ')}`,
        );
      // geth evaluates an unregistered name as JavaScript, "(" + name + ")".
      throw new TracerConfigError(`ReferenceError: ${name} is not defined at <eval>:1:2(0)`);
  }
}

export type { StructLoggerConfig };
