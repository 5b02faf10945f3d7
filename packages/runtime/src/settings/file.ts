// Reading the settings: a config object or file through SERVER_FIELDS (fields.ts), what of them the
// rpc service and the server take, and the flags of `serve` a file sets.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FilterLimits, RpcConfig } from '@chainnode/rpc/settings';
import { DEFAULT_TRANSPORT_CONFIG } from '@chainnode/server/settings';
import type { TransportConfig } from '@chainnode/server/settings';
import { SERVER_FIELDS } from './fields.js';
import { ConfigError, canonicalName, defaultsOf, isRecord, readFields } from './schema.js';
import type { ConfigField, ConfigValues, RpcIntegerField } from './schema.js';

export type ServerConfig = ConfigValues<typeof SERVER_FIELDS>;

/** Every default, from SERVER_FIELDS (listed in docs/reference/configuration.md). */
export const DEFAULT_CONFIG: ServerConfig = defaultsOf(SERVER_FIELDS);

/** Merges a parsed config object over the defaults, validating every field. */
export function parseConfig(raw: unknown, source = 'config'): ServerConfig {
  if (!isRecord(raw)) throw new ConfigError(`${source}: expected a JSON object`);
  const out: ServerConfig = structuredClone(DEFAULT_CONFIG);
  readFields(SERVER_FIELDS, raw, (k) => `${source}: ${k}`, out);
  if (
    out.defaultNetwork !== undefined &&
    out.networks.length > 0 &&
    !out.networks.some((n) => n.name === out.defaultNetwork)
  ) {
    throw new ConfigError(`${source}: defaultNetwork "${out.defaultNetwork}" is not among networks`);
  }
  return out;
}

/** The rpc service's settings from a server config: every field with `rpc` in SERVER_FIELDS. */
export function rpcConfigOf(config: ServerConfig): Partial<RpcConfig> {
  const out: Partial<Record<RpcIntegerField, number>> = {};
  for (const [name, field] of Object.entries(SERVER_FIELDS) as [keyof ServerConfig, ConfigField<unknown>][]) {
    if (field.rpc !== undefined) out[field.rpc] = config[name] as number;
  }
  return out;
}

/** The polled filters' limits and lifetime from a server config (every filter store takes them). */
export function filterLimitsOf(config: ServerConfig): FilterLimits {
  return { perKey: config.filtersPerKey, total: config.filtersTotal, timeoutMs: config.filterTimeoutMs };
}

/** The server's settings from a server config: every field of TransportConfig. */
export function transportConfigOf(config: ServerConfig): TransportConfig {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(DEFAULT_TRANSPORT_CONFIG)) out[name] = config[name as keyof TransportConfig];
  return out as unknown as TransportConfig;
}

/** A read configuration: the values, and the fields the file set (the rest are defaults). */
export interface ConfigFile {
  config: ServerConfig;
  /** The file read; undefined when there was none (the defaults). */
  path: string | undefined;
  set: ReadonlySet<keyof ServerConfig>;
}

/** `--config <file>` if given, else `<datadir>/server.json` if present, else the defaults. */
export function loadConfig(datadir: string, file?: string): ServerConfig {
  return readConfigFile(datadir, file).config;
}

/**
 * The flags of `serve` a file sets, as the flags' text (see FlagSpec): what `serve` takes from
 * the file for every flag not given on the command line (flag > file > default).
 */
export function flagsFromFile(file: ConfigFile): Map<keyof ServerConfig, string | boolean> {
  const out = new Map<keyof ServerConfig, string | boolean>();
  for (const name of file.set) {
    if ((SERVER_FIELDS[name] as ConfigField<unknown>).flag === undefined) continue;
    const text = flagText(SERVER_FIELDS[name] as ConfigField<unknown>, file.config[name]);
    if (text !== undefined) out.set(name, text);
  }
  return out;
}

/** A field's value as its flag would say it (undefined: as if the flag were absent). */
export function flagText(field: ConfigField<unknown>, value: unknown): string | boolean | undefined {
  if (field.flag?.text !== undefined) return (field.flag.text as (v: unknown) => string | boolean | undefined)(value);
  return typeof value === 'boolean' ? value : String(value);
}

/** loadConfig, with the fields the file set. */
export function readConfigFile(datadir: string, file?: string): ConfigFile {
  const path = file ?? join(datadir, 'server.json');
  if (file === undefined && !existsSync(path))
    return { config: structuredClone(DEFAULT_CONFIG), path: undefined, set: new Set() };
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config ${path} is not valid JSON: ${(err as Error).message}`);
  }
  const config = parseConfig(raw, path);
  const set = Object.keys(raw as object).map((k) => canonicalName(SERVER_FIELDS, k) as keyof ServerConfig);
  return { config, path, set: new Set(set) };
}
