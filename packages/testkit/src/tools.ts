// Debian tools the operations tests start (nginx, prometheus, promtool): their path, or undefined
// when not installed, in which case the test logs one line and skips (.ci/run installs them).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Path of `name` (PATH, then /usr/sbin, /usr/bin), or undefined when it is not installed. */
export function toolPath(name: string): string | undefined {
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const found = which.stdout.trim();
  if (which.status === 0 && found !== '') return found;
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/bin', '/usr/local/sbin'])
    if (existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  return undefined;
}

/** The one line a test logs when it skips for want of `tools`. */
export function missingTools(tools: string[]): string {
  return `${tools.join(', ')} not installed: skipped (install: apt-get install ${tools.join(' ')}, or run .ci/run)`;
}
