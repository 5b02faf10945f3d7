// `npm run docs`: writes the generated reference pages to docs/reference/ (cli.md,
// configuration.md, methods.md, metrics.md), each derived from the code it documents
// (reference.ts), and the generated sections of the hand-written pages (doc-sections.ts).
// Deterministic; scripts/test/docs-generated.test.ts fails when a committed page differs from
// what this writes.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docSections, spliceSection } from './doc-sections.js';
import { referencePages } from './reference.js';

/** The root of this checkout (this file runs from scripts/dist/src/). */
const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const REFERENCE_DIR = join(REPO_ROOT, 'docs', 'reference');

async function main(): Promise<void> {
  await mkdir(REFERENCE_DIR, { recursive: true });
  for (const { file, text } of referencePages()) {
    await writeFile(join(REFERENCE_DIR, file), text);
    process.stderr.write(`docs: wrote docs/reference/${file}\n`);
  }
  for (const section of docSections(REPO_ROOT)) {
    const path = join(REPO_ROOT, 'docs', section.file);
    await writeFile(path, spliceSection(await readFile(path, 'utf8'), section));
    process.stderr.write(`docs: wrote the ${section.name} section of docs/${section.file}\n`);
  }
}

await main();
