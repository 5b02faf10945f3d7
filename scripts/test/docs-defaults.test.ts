// Hand-written docs pages may quote a server.json default in a table (a "default" column next to
// a row naming the field), for the reader's convenience; the figure must be the one the code
// uses. Every such cell of README.md and docs/**/*.md (the generated docs/reference/ aside) is
// read back as a value and compared with DEFAULT_CONFIG.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DEFAULT_CONFIG, SERVER_FIELDS } from '@chainnode/runtime';
import { REPO_ROOT } from './fixture-files.js';

const UNITS: Record<string, number> = { KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/** A default as docs write it ("1 MiB", "25,000,000", "0 (off)", "`[\"*\"]`", "`127.0.0.1`") as a value. */
function readValue(text: string): unknown {
  const t = text
    .replace(/\(.*?\)/g, '')
    .replace(/`/g, '')
    .trim();
  const sized = /^(\d+(?:\.\d+)?) (KiB|MiB|GiB)$/.exec(t);
  if (sized) return Number(sized[1]) * (UNITS[sized[2] as string] as number);
  if (/^\d{1,3}(,\d{3})*$|^\d+$/.test(t)) return Number(t.replace(/,/g, ''));
  if (t === 'true' || t === 'false') return t === 'true';
  if (t.startsWith('[') || t.startsWith('{')) return JSON.parse(t) as unknown;
  return t;
}

interface Quote {
  where: string;
  field: string;
  written: unknown;
}

/** Every (field, written default) in the tables of `text` that have a "default" column. */
function quotedDefaults(file: string, text: string, fields: readonly string[]): Quote[] {
  const out: Quote[] = [];
  const lines = text.split('\n');
  let col = -1;
  lines.forEach((line, i) => {
    if (!line.startsWith('|')) {
      col = -1;
      return;
    }
    const cells = line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split('|')
      .map((c) => c.trim());
    if (col < 0) {
      col = cells.findIndex((c) => c.toLowerCase() === 'default');
      if (col < 0) col = -2; // a table without a default column: skip its rows
      return;
    }
    if (col === -2 || /^-+$/.test(cells[0] ?? '')) return;
    const named = [...(cells[0] ?? '').matchAll(/`([A-Za-z]+)`/g)]
      .map((m) => m[1] as string)
      .filter((f) => fields.includes(f));
    if (named.length === 0) return;
    const values = named.length === 1 ? [cells[col] ?? ''] : (cells[col] ?? '').split(/,\s+/);
    named.forEach((field, k) => {
      out.push({ where: `${file}:${i + 1}`, field, written: readValue(values[k] ?? '') });
    });
  });
  return out;
}

function handWrittenPages(): string[] {
  const pages = [join(REPO_ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory() && e.name !== 'reference') walk(p);
      else if (e.isFile() && e.name.endsWith('.md')) pages.push(p);
    }
  };
  walk(join(REPO_ROOT, 'docs'));
  return pages;
}

const FIELDS = Object.keys(SERVER_FIELDS);

test('reads the ways docs write a default', () => {
  expect(readValue('1 MiB')).toBe(1_048_576);
  expect(readValue('128 MiB')).toBe(134_217_728);
  expect(readValue('25,000,000')).toBe(25_000_000);
  expect(readValue('0 (off)')).toBe(0);
  expect(readValue('`["*"]`')).toEqual(['*']);
  expect(readValue('`127.0.0.1`')).toBe('127.0.0.1');
  const sample = [
    '| field | default | meaning |',
    '| --- | --- | --- |',
    '| HTTP body (`maxBodyBytes`) | 2 MiB | 413 |',
    '| `subscriptionsPerConnection`, `subscriptionsPerKey` | 100, 1000 | -32005 |',
    '| getLogs results | 10,000 | -32005 |',
  ].join('\n');
  expect(quotedDefaults('x.md', sample, FIELDS)).toEqual([
    { where: 'x.md:3', field: 'maxBodyBytes', written: 2_097_152 },
    { where: 'x.md:4', field: 'subscriptionsPerConnection', written: 100 },
    { where: 'x.md:4', field: 'subscriptionsPerKey', written: 1000 },
  ]);
});

test('every default quoted in a hand-written page is the one the code uses', () => {
  const quotes = handWrittenPages().flatMap((p) =>
    quotedDefaults(relative(REPO_ROOT, p), readFileSync(p, 'utf8'), FIELDS),
  );
  // The security page's limit tables quote several; the check is not vacuous.
  expect(quotes.length).toBeGreaterThanOrEqual(5);
  const config = DEFAULT_CONFIG as unknown as Record<string, unknown>;
  const wrong = quotes.filter((q) => JSON.stringify(q.written) !== JSON.stringify(config[q.field]));
  expect(
    wrong.map(
      (q) => `${q.where}: ${q.field} written ${JSON.stringify(q.written)}, code ${JSON.stringify(config[q.field])}`,
    ),
  ).toEqual([]);
});
