// The follow settings as a flag gives them (text): `--reorg-depth`, `--ingest`, `--start-block`,
// `--checkpoint`, `--state-trie` and the upstream's URL, read into ingest's FollowSettings types. `serve` and
// `sync` both take them; a bad value is a ConfigError naming the flag.
import type { IngestMode, JoinState, StartBlock } from '@chainnode/ingest';
import { StateTrieSettingError, parseStateTrie } from '@chainnode/store/settings';
import type { StateTrieMode } from '@chainnode/store/settings';
import { ConfigError } from './schema.js';

/** `--start-block <N|head-K>`: a block number (decimal or 0x-hex, above 0) or the upstream's head minus K. */
export function parseStartBlock(value: string | undefined): StartBlock | undefined {
  if (value === undefined) return undefined;
  const m = /^head-([0-9]+)$/.exec(value);
  if (m !== null) return { headMinus: BigInt(m[1] as string) };
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(value) || BigInt(value) === 0n)
    throw new ConfigError(`--start-block: expected a block number above 0 or head-K, got "${value}"`);
  return { number: BigInt(value) };
}

/** `--checkpoint <hash>`: the 32-byte hash the start block must have. */
export function parseCheckpoint(value: string | undefined): Uint8Array | undefined {
  if (value === undefined) return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(value))
    throw new ConfigError(`--checkpoint: expected a 0x-prefixed 32-byte block hash, got "${value}"`);
  return Uint8Array.from(Buffer.from(value.slice(2), 'hex'));
}

/** A JSON-RPC upstream's URL (http(s):// or ws(s)://) rather than a directory. */
export const isUpstreamUrl = (from: string): boolean => /^(https?|wss?):\/\//i.test(from);

/** `--ingest execute|replicate` (default execute). */
export function parseIngestMode(value: string | undefined): IngestMode {
  if (value === undefined || value === 'execute') return 'execute';
  if (value === 'replicate') return 'replicate';
  throw new ConfigError(`--ingest: expected "execute" or "replicate", got "${value}"`);
}

/** `--join-state proofs|download`: how a joining datadir gets its state; absent: the datadir's own (a new one: proofs). */
export function parseJoinState(value: string | undefined): JoinState | undefined {
  if (value === undefined) return undefined;
  if (value === 'proofs' || value === 'download') return value;
  throw new ConfigError(`--join-state: expected "proofs" or "download", got "${value}"`);
}

/** `--reorg-depth <n>` (default 64). */
export function parseReorgDepth(value: string | undefined): bigint {
  if (value === undefined) return 64n;
  if (!/^[0-9]+$/.test(value)) throw new ConfigError(`--reorg-depth: expected a number of blocks, got "${value}"`);
  return BigInt(value);
}

/** `--trace-frames on|off`: whether executed blocks' call frames are recorded; absent: the datadir's own. */
export function parseTraceFramesFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'off') return value === 'on';
  throw new ConfigError(`--trace-frames: expected "on" or "off", got "${value}"`);
}

/**
 * `--state-trie window=<N>|archive`: the state trie's retention of a datadir created from genesis
 * (store's trie-window.ts); absent: the datadir's own (a new one: window=90000).
 */
export function parseStateTrieFlag(value: string | undefined, where = '--state-trie'): StateTrieMode | undefined {
  if (value === undefined) return undefined;
  try {
    return parseStateTrie(value);
  } catch (err) {
    if (err instanceof StateTrieSettingError)
      throw new ConfigError(`${where}: ${err.message.replace(/^state trie: /, '')}`);
    throw err;
  }
}
