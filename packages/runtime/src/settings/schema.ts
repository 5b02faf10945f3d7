// The machinery of a settings schema: one ConfigField per setting (its JSON type and check, its
// default, unit and range, its flag, its former name), the constructors the schema is written
// with, and the reading of a JSON object through a schema (unknown names refused, former names
// read as the field). The schema itself is fields.ts.
import { DEFAULT_RPC_CONFIG } from '@chainnode/rpc/settings';
import type { RpcConfig } from '@chainnode/rpc/settings';
import { DEFAULT_TRANSPORT_CONFIG } from '@chainnode/server/settings';
import type { TransportConfig } from '@chainnode/server/settings';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The integer fields of RpcConfig: those a server field may be handed to. */
export type RpcIntegerField = { [K in keyof RpcConfig]: RpcConfig[K] extends number ? K : never }[keyof RpcConfig];

/** One field of a configuration object: how it is read, its default, and what the reference says of it. */
export interface ConfigField<T> {
  /** The JSON type, as the reference names it. */
  readonly type: string;
  /** One line for the reference. */
  readonly doc: string;
  /** Unit of a number (bytes, ms, …). */
  readonly unit?: string;
  /** Inclusive bounds of an integer, checked after its type ("<field> must be at least <min>"). */
  readonly min?: number;
  readonly max?: number;
  /** Value when the file does not set the field (undefined: absent). */
  readonly default: T;
  /** The default as the reference shows it, when the value itself does not say it. */
  readonly defaultText?: string;
  /** Checks the JSON value; throws ConfigError starting with `where` (the file and the field). */
  readonly parse: (value: unknown, where: string) => T;
  /** The RpcConfig field this one is handed to (rpcConfigOf). */
  readonly rpc?: RpcIntegerField;
  /** The `serve` flag that sets this field too (its name: the field's in kebab case). */
  readonly flag?: FlagSpec;
  /** The field's former name, still accepted in a file (one or the other, not both). */
  readonly alias?: string;
}

/**
 * A field that is also a flag of `serve` (and `start`, unless `serveOnly`): `--<kebab-name>
 * <arg>`, or a switch without `arg`. Commander hands flags over as text: `text` is a file value in
 * that form (what the flag would have said), undefined when it means the flag is absent.
 */
export interface FlagSpec {
  /** The value's name in the usage (`--port <port>`); absent: a switch. */
  readonly arg?: string;
  /** Only `serve` has it (the follow and network flags), not `start`. */
  readonly serveOnly?: boolean;
  /** Left out of --help (still in the references). */
  readonly hidden?: boolean;
  /** The flag's text for a file value (default: String(value)). */
  readonly text?: (value: never) => string | boolean | undefined;
}

/** `--kebab-case` of a field name. */
export function flagName(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** A configuration object's fields by name. */
export type ConfigSchema = Readonly<Record<string, ConfigField<unknown>>>;

/** The values a schema describes (each field's parsed type). */
export type ConfigValues<S extends ConfigSchema> = {
  -readonly [K in keyof S]: S[K] extends ConfigField<infer T> ? T : never;
};

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function nonNegInt(where: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ConfigError(`${where}: expected a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

export interface IntegerSpec {
  doc: string;
  alias?: string;
  defaultText?: string;
  unit?: string;
  min?: number;
  max?: number;
  flag?: FlagSpec;
}

/** A field of type T (the helper fixes T for the schema's inference). */
export function field<T>(spec: ConfigField<T>): ConfigField<T> {
  return spec;
}

/** A non-negative integer field, optionally bounded. */
export function integer(spec: IntegerSpec & { default: number }): ConfigField<number> {
  const { min, max } = spec;
  return {
    type: 'integer',
    ...spec,
    parse: (v, where) => {
      const n = nonNegInt(where, v);
      if (min !== undefined && n < min) throw new ConfigError(`${where} must be at least ${min}`);
      if (max !== undefined && n > max) throw new ConfigError(`${where} must be at most ${max}`);
      return n;
    },
  };
}

/** An integer field handed to the rpc service as RpcConfig[field]; its default is the rpc service's. */
export function rpcInteger(field: RpcIntegerField, spec: IntegerSpec): ConfigField<number> {
  return { ...integer({ ...spec, default: DEFAULT_RPC_CONFIG[field] }), rpc: field };
}
/** The TransportConfig fields of the schema: those handed to the server (transportConfigOf). */
export type TransportField = keyof TransportConfig;

/** An integer field handed to the server as TransportConfig[field]; its default is the server's. */
export function transportInteger(
  field: { [K in TransportField]: TransportConfig[K] extends number ? K : never }[TransportField],
  spec: IntegerSpec,
): ConfigField<number> {
  return integer({ ...spec, default: DEFAULT_TRANSPORT_CONFIG[field] });
}

export function boolean(spec: {
  doc: string;
  default: boolean;
  defaultText?: string;
  flag?: FlagSpec;
}): ConfigField<boolean> {
  return {
    type: 'boolean',
    ...spec,
    parse: (v, where) => {
      if (typeof v !== 'boolean') throw new ConfigError(`${where}: expected a boolean`);
      return v;
    },
  };
}

/** A string field without a default (absent unless set). */
export function optionalString(spec: {
  doc: string;
  defaultText?: string;
  flag?: FlagSpec;
}): ConfigField<string | undefined> {
  return {
    type: 'string',
    ...spec,
    default: undefined,
    parse: (v, where) => {
      if (typeof v !== 'string') throw new ConfigError(`${where}: expected a string`);
      return v;
    },
  };
}

/** A non-empty string field with a default. */
export function text(spec: { doc: string; default: string; flag?: FlagSpec }): ConfigField<string> {
  return {
    type: 'string',
    ...spec,
    parse: (v, where) => {
      if (typeof v !== 'string' || v === '') throw new ConfigError(`${where}: expected a non-empty string`);
      return v;
    },
  };
}

function enumParse<V extends string>(values: readonly V[]): (v: unknown, where: string) => V {
  return (v, where) => {
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v))
      throw new ConfigError(
        `${where}: expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}, got ${JSON.stringify(v)}`,
      );
    return v as V;
  };
}

const enumType = (values: readonly string[]): string => values.map((v) => JSON.stringify(v)).join(' | ');

/** One of `values`, with a default. */
export function oneOf<V extends string>(
  values: readonly V[],
  spec: { doc: string; default: NoInfer<V>; flag?: FlagSpec },
): ConfigField<V> {
  return { type: enumType(values), ...spec, parse: enumParse(values) };
}

/** One of `values`, absent unless set. */
export function optionalOneOf<V extends string>(
  values: readonly V[],
  spec: { doc: string; defaultText?: string; flag?: FlagSpec },
): ConfigField<V | undefined> {
  const parse = enumParse(values);
  return { type: enumType(values), ...spec, default: undefined, parse: (v, where) => parse(v, where) };
}

/** A TCP port, 0 to 65535, without a default (absent unless set). */
export function optionalPort(spec: {
  doc: string;
  defaultText?: string;
  flag: FlagSpec;
}): ConfigField<number | undefined> {
  return {
    type: 'integer',
    unit: 'port',
    max: 65535,
    default: undefined,
    ...spec,
    parse: (v, where) => {
      const n = nonNegInt(where, v);
      if (n > 65535) throw new ConfigError(`${where} must be at most 65535`);
      return n;
    },
  };
}

/**
 * Reads `raw`'s fields into `out` (which holds the defaults): each through its field's parse,
 * an unknown name is an error, a field's former name (alias) is read as the field. `path(k)` names
 * field k in messages.
 */
export function readFields(
  schema: ConfigSchema,
  raw: Record<string, unknown>,
  path: (k: string) => string,
  out: object,
): void {
  const target = out as Record<string, unknown>;
  for (const [given, v] of Object.entries(raw)) {
    const k = canonicalName(schema, given);
    if (k !== given && Object.hasOwn(raw, k))
      throw new ConfigError(`${path(given)}: the former name of ${k}, which is set too`);
    const field = Object.hasOwn(schema, k) ? schema[k] : undefined;
    if (field === undefined) {
      const camel = k.replace(/^-+/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
      const hint = camel !== k && Object.hasOwn(schema, camel) ? ` (did you mean "${camel}"?)` : '';
      throw new ConfigError(`${path(k)}: unknown field${hint}`);
    }
    target[k] = field.parse(v, path(given));
  }
}

/** A field's name for `name`, its own or its former one (alias); other names as they are. */
export function canonicalName(schema: ConfigSchema, name: string): string {
  if (Object.hasOwn(schema, name)) return name;
  return Object.entries(schema).find(([, f]) => f.alias === name)?.[0] ?? name;
}

/** The defaults of a schema (fields whose default is undefined are left out). */
export function defaultsOf<S extends ConfigSchema>(schema: S): ConfigValues<S> {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(schema)) if (f.default !== undefined) out[k] = structuredClone(f.default);
  return out as ConfigValues<S>;
}
