// The disk gauges of a network served from a datadir: the bytes its files take (every file below
// it, symbolic links not followed) and the free space of the filesystem it is on, which the
// alert on disk growth (deploy/prometheus/alerts.yml) extrapolates.
import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { DiskView } from './metrics.js';

async function bytesBelow(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += await bytesBelow(path);
    else if (e.isFile())
      total += await lstat(path).then(
        (s) => s.size,
        () => 0,
      );
  }
  return total;
}

export async function datadirDisk(datadir: string): Promise<DiskView> {
  const fs = await statfs(datadir);
  return { datadirBytes: await bytesBelow(datadir), freeBytes: fs.bavail * fs.bsize };
}
