// foundry's `cast` (the registry's @foundry-rs/cast 1.7.1 linux-x64 binary, a dev dependency like
// anvil) run as a user runs it: one process per command with `--rpc-url`, its stdout as printed.
// Helpers to run the same commands against two nodes at once and to set apart the lines of the
// `key  value` listings (block, tx, receipt) where anvil deviates from geth.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@chainnode/testkit';

const CAST = join(repoRoot(), 'node_modules', '.bin', 'cast');

/** The cast binary's path; throws one line saying how to install it when it is missing. */
export function castBinary(): string {
  if (!existsSync(CAST))
    throw new Error(`cast not found at ${CAST}: run npm ci (dev dependency @foundry-rs/cast-linux-amd64)`);
  return CAST;
}

/**
 * `cast <command> --rpc-url <url> <args…>`: its stdout without the final newline; rejects with its
 * stderr. Run in the temp directory: in the repository cast looks for a foundry project (config,
 * remappings under node_modules) first, which costs it up to seconds a command.
 */
export function cast(url: string, command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      castBinary(),
      [command, '--rpc-url', url, ...args],
      { timeout: 60_000, cwd: tmpdir() },
      (err, stdout, stderr) => {
        if (err !== null)
          reject(new Error(`cast ${command} ${args.join(' ')} (${url}): ${stderr.trim() || err.message}`));
        else resolve(stdout.replace(/\n$/, ''));
      },
    );
  });
}

/** Each command run against `a` and `b`, all processes at once: [a's stdout, b's stdout] per command. */
export function castBoth(
  a: string,
  b: string,
  commands: readonly (readonly [string, ...string[]])[],
): Promise<[string, string][]> {
  return Promise.all(
    commands.map(([command, ...args]) => Promise.all([cast(a, command, args), cast(b, command, args)])),
  );
}

/**
 * A `key  value` listing split into the lines of `keys` (by key, value trimmed) and the other
 * lines as printed.
 */
export function splitFields(out: string, keys: readonly string[]): { fields: Record<string, string>; rest: string } {
  const fields: Record<string, string> = {};
  const rest: string[] = [];
  for (const line of out.split('\n')) {
    const m = /^(\w+)(?:\s+(.*))?$/.exec(line);
    if (m !== null && keys.includes(m[1] as string)) fields[m[1] as string] = (m[2] ?? '').trim();
    else rest.push(line);
  }
  return { fields, rest: rest.join('\n') };
}
