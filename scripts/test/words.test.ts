// The project speaks of itself: code, tests, docs and benchmark records name the domain (blocks,
// keys, credits), never how the work was organised. Every tracked text file is scanned for the
// words of that organisation: numbered work sessions, issue numbers, run labels such as E1, and
// workstreams. "session" on its own is the dashboard's domain word (a login session): it may
// appear in the dashboard's files and, elsewhere, only as "login session".
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './fixture-files.js';

interface Rule {
  name: string;
  re: RegExp;
  /** Paths (repo-relative) where the rule does not apply. */
  except?: (path: string) => boolean;
}

const DASHBOARD_FILES = (path: string): boolean => /(^|\/)dashboard|(^|\/)cmds\/admin\//.test(path);

const RULES: Rule[] = [
  { name: 'numbered session', re: /\bsessions? \d+/i },
  { name: 'issue number', re: /\bissues? #?\d+/i },
  { name: 'run label', re: /\bE\d{1,3}\b/ },
  { name: 'workstream', re: /\bworkstreams?\b/i },
  { name: 'session (outside the dashboard)', re: /(?<!login )\bsessions?\b/i, except: DASHBOARD_FILES },
];

/** `file:line: rule: text` for every match of a rule in `text`. */
function findWords(path: string, text: string): string[] {
  const found: string[] = [];
  const lines = text.split('\n');
  for (const rule of RULES) {
    if (rule.except?.(path)) continue;
    lines.forEach((line, i) => {
      if (rule.re.test(line)) found.push(`${path}:${i + 1}: ${rule.name}: ${line.trim().slice(0, 120)}`);
    });
  }
  return found;
}

/** This file states the patterns, so it is the one file not scanned. */
const SELF = 'scripts/test/words.test.ts';

function trackedTextFiles(): { path: string; text: string }[] {
  const paths = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((p) => p !== '' && p !== SELF && p !== 'package-lock.json');
  const out: { path: string; text: string }[] = [];
  for (const path of paths) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(REPO_ROOT, path));
    } catch {
      continue; // deleted in the work tree, not yet committed
    }
    if (bytes.includes(0)) continue; // binary (chain.rlp, images)
    out.push({ path, text: bytes.toString('utf8') });
  }
  return out;
}

describe('the project speaks of itself', () => {
  it('finds each kind of word in a sample (the rules can fail)', () => {
    const sample = [
      'Measured in session 2 on this host.',
      'As issue #1 asks, and issue 2 before it.',
      'Run E1 gave 1,000 req/s.',
      'Another workstream adds fields.',
      'This session measured it.',
    ].join('\n');
    expect(findWords('packages/store/src/x.ts', sample).map((f) => f.split(': ')[1])).toEqual([
      'numbered session',
      'issue number',
      'run label',
      'workstream',
      'session (outside the dashboard)',
      'session (outside the dashboard)',
    ]);
    // The dashboard's login sessions are domain words.
    expect(findWords('packages/dashboard/src/admin.ts', 'a CSRF token per session')).toEqual([]);
    expect(findWords('docs/security.md', 'Login session cookies are hashed.')).toEqual([]);
    // Hex, variable names and spec sections are not labels.
    expect(findWords('packages/store/src/x.ts', 'const e0 = 0xE18; spec 8.1; 1E18 wei')).toEqual([]);
  });

  it('no tracked file names sessions, issue numbers, run labels or workstreams', () => {
    const files = trackedTextFiles();
    expect(files.length).toBeGreaterThan(200);
    const found = files.flatMap((f) => findWords(f.path, f.text));
    expect(found).toEqual([]);
  });
});
