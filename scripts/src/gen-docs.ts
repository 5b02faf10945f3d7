// `npm run docs`: writes the generated reference pages to docs/reference/ (cli.md,
// configuration.md, methods.md, metrics.md), each derived from the code it documents
// (reference.ts). Deterministic; scripts/test/docs-generated.test.ts fails when a committed page
// differs from what this writes.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { referencePages } from './reference.js';

/** docs/reference/ of this checkout (this file runs from scripts/dist/src/). */
const REFERENCE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'reference');

async function main(): Promise<void> {
  await mkdir(REFERENCE_DIR, { recursive: true });
  for (const { file, text } of referencePages()) {
    await writeFile(join(REFERENCE_DIR, file), text);
    process.stderr.write(`docs: wrote docs/reference/${file}\n`);
  }
}

await main();
