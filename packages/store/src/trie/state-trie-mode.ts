// The state trie's retention setting as text and value (`archive` or `window=<N>`), on its own:
// the settings schema parses it without the store's schema and tables (trie-window.ts reads and
// writes it in a datadir).

export type StateTrieMode = { kind: 'archive' } | { kind: 'window'; blocks: number };

/** geth's path scheme keeps 90,000 blocks of state history by default; so does the window. */
export const DEFAULT_TRIE_WINDOW = 90_000;

export const DEFAULT_STATE_TRIE: StateTrieMode = { kind: 'window', blocks: DEFAULT_TRIE_WINDOW };

export class StateTrieSettingError extends Error {}

/** Parses `archive` or `window=<N>` (N a positive integer of at most 2^31). */
export function parseStateTrie(text: string): StateTrieMode {
  if (text === 'archive') return { kind: 'archive' };
  const m = /^window=(\d+)$/.exec(text);
  const n = m === null ? Number.NaN : Number(m[1]);
  if (!Number.isSafeInteger(n) || n < 1 || n > 2 ** 31) {
    throw new StateTrieSettingError(
      `state trie: expected "archive" or "window=<N>" with N a positive number of blocks, not ${JSON.stringify(text)}`,
    );
  }
  return { kind: 'window', blocks: n };
}

export function formatStateTrie(m: StateTrieMode): string {
  return m.kind === 'archive' ? 'archive' : `window=${m.blocks}`;
}
