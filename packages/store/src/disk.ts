import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes of every file below `dir` (the datadir's LevelDB, key file, usage journal, ...). */
export async function sizeOnDisk(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await sizeOnDisk(p);
    else if (e.isFile()) total += (await stat(p)).size;
  }
  return total;
}
