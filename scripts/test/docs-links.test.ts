// Links between the docs: in README.md, every docs/**/*.md and every packages/*/README.md, each
// relative link reaches an existing file and each #anchor (same page or other.md#anchor) names
// a heading of its target under GitHub's rules (or an explicit <a id>/<a name>). http(s) and
// mailto links, and anything inside code, are not checked. Also: README.md stays short.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { checkLinks, pageAnchors, pageLinks, slug } from '../src/doc-links.js';
import type { DocTree, LinkProblem } from '../src/doc-links.js';
import { REPO_ROOT } from './fixture-files.js';

const disk: DocTree = {
  exists: (path) => existsSync(join(REPO_ROOT, path)),
  isDirectory: (path) => statSync(join(REPO_ROOT, path)).isDirectory(),
  read: (path) => readFileSync(join(REPO_ROOT, path), 'utf8'),
};

/** README.md, docs/**\/*.md and packages/*\/README.md, relative to the repository root. */
function docFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(REPO_ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(REPO_ROOT, 'docs'))) walk('docs');
  for (const pkg of readdirSync(join(REPO_ROOT, 'packages'))) {
    if (existsSync(join(REPO_ROOT, 'packages', pkg, 'README.md'))) files.push(`packages/${pkg}/README.md`);
  }
  return files.sort();
}

const show = (p: LinkProblem): string => `${p.file}:${p.line}: ${p.target} (${p.problem})`;

test('every relative link and #anchor of the docs resolves', () => {
  const files = docFiles();
  expect(files).toContain('README.md');
  expect(files).toContain('docs/reference/cli.md');
  let checked = 0;
  const problems: string[] = [];
  for (const file of files) {
    const r = checkLinks(file, disk);
    checked += r.checked;
    problems.push(...r.problems.map(show));
  }
  // Not vacuous: the generated pages alone link to their own headings.
  expect(checked).toBeGreaterThan(10);
  expect(problems).toEqual([]);
});

test('README.md is at most 150 lines', () => {
  const lines = disk.read('README.md').replace(/\n$/, '').split('\n').length;
  expect(lines).toBeLessThanOrEqual(150);
});

describe('the checker itself', () => {
  test("GitHub's heading slugs", () => {
    expect(slug('Limits: plans, credits, throughput')).toBe('limits-plans-credits-throughput');
    expect(slug('`node-cli serve` options')).toBe('node-cli-serve-options');
    expect(slug('What’s new? (2.0)')).toBe('whats-new-20');
    expect(slug('Keys  and   credits')).toBe('keys--and---credits');
    expect(slug('snake_case & [a link](x.md)')).toBe('snake_case--a-link');
    expect(slug('Ünïcode Straße')).toBe('ünïcode-straße');
  });

  test('headings (duplicates numbered), explicit anchors, nothing from code', () => {
    const text = [
      '# Title',
      '## Usage',
      '## Usage',
      '## Usage',
      'Setext heading',
      '--------------',
      '<a id="custom"></a>',
      '<a name="named"></a>',
      '```',
      '## Not a heading',
      '<a id="in-code"></a>',
      '```',
      'Some `<a id="inline-code">` text.',
    ].join('\n');
    expect([...pageAnchors(text)].sort()).toEqual(
      ['custom', 'named', 'setext-heading', 'title', 'usage', 'usage-1', 'usage-2'].sort(),
    );
  });

  test('a synthetic page: broken files and anchors are reported with their lines, the rest is not', () => {
    const files: Record<string, string> = {
      'docs/a.md': [
        '# A',
        '## Two words',
        'Good: [self](#two-words), [other](b.md#b-heading), [dir](../docs), [up](../README.md#readme),',
        'Bad file: [gone](missing.md).',
        'Bad anchor: [nope](#no-such-heading) and [there](b.md#wrong).',
        'Case matters: [upper](#Two-words).',
        'Ignored: [web](https://example.com/x.md#y), [mail](mailto:a@b.c), `[code](nothere.md)`.',
        '```md',
        '[fenced](nothere.md)',
        '```',
        '![image](img.png) ![gone](gone.png) <a href="b.md#b-heading">html</a> <a href="#absent">html</a>',
        '[ref]: b.md#gone',
      ].join('\n'),
      'docs/b.md': '# B heading\n',
      'docs/img.png': '',
      'README.md': '# Readme\n',
    };
    const tree: DocTree = {
      exists: (p) => p in files || p === 'docs',
      isDirectory: (p) => p === 'docs',
      read: (p) => files[p] as string,
    };
    expect(pageLinks(files['docs/a.md'] as string).map((l) => l.target)).not.toContain('nothere.md');
    const r = checkLinks('docs/a.md', tree);
    expect(r.problems.map(show)).toEqual([
      'docs/a.md:4: missing.md (no such file)',
      'docs/a.md:5: #no-such-heading (no heading or <a id> "no-such-heading" in docs/a.md)',
      'docs/a.md:5: b.md#wrong (no heading or <a id> "wrong" in docs/b.md)',
      'docs/a.md:6: #Two-words (no heading or <a id> "Two-words" in docs/a.md)',
      'docs/a.md:11: gone.png (no such file)',
      'docs/a.md:11: #absent (no heading or <a id> "absent" in docs/a.md)',
      'docs/a.md:12: b.md#gone (no heading or <a id> "gone" in docs/b.md)',
    ]);
    expect(r.checked).toBe(13); // the 13 relative links above; web, mail and code ones are not counted
  });
});
