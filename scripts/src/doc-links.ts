// Links between the docs: GitHub's heading anchors, the relative links and #anchors of a page,
// and the check that each link reaches an existing file and, with #anchor, a heading of it
// (scripts/test/docs-links.test.ts runs it over README.md, docs/ and the package READMEs).

/**
 * GitHub's anchor for a heading text: lowercase; everything but letters, digits, spaces, `-` and
 * `_` removed; spaces to `-`. (Markup is stripped first: code spans keep their text, links their
 * label, emphasis markers go.)
 */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\\([!-/:-@[-`{-~])/g, '$1')
    .replace(/[`*]/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** A link (or image) of a page, with its 1-based line. */
export interface PageLink {
  line: number;
  target: string;
}

/**
 * Lines of `text` outside fenced code blocks: `raw`, and `text` with inline code spans blanked (so
 * nothing in code counts as a link or an anchor). Each entry keeps its 1-based line number.
 */
function proseLines(text: string): { line: number; raw: string; text: string }[] {
  const out: { line: number; raw: string; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(raw);
    if (fence !== undefined) {
      if (m !== null && m[1]?.[0] === fence[0] && (m[1]?.length ?? 0) >= fence.length && raw.trim() === m[1])
        fence = undefined;
      return;
    }
    if (m !== null) {
      fence = m[1];
      return;
    }
    out.push({ line: i + 1, raw, text: raw.replace(/(`+)(?:(?!\1).)+?\1/g, (s) => ' '.repeat(s.length)) });
  });
  return out;
}

/** Every link and image target of a page outside code: inline `[x](target)` and reference definitions. */
export function pageLinks(text: string): PageLink[] {
  const links: PageLink[] = [];
  for (const { line, text: t } of proseLines(text)) {
    for (const m of t.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+"[^"]*")?\s*\)/g)) {
      const target = (m[1] ?? '').replace(/^<|>$/g, '');
      links.push({ line, target });
    }
    const def = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(t);
    if (def !== null) links.push({ line, target: def[1] as string });
    for (const m of t.matchAll(/<a\s[^>]*href="([^"]*)"/g)) links.push({ line, target: m[1] as string });
  }
  return links;
}

/** The anchors a page defines: its headings under GitHub's rules (duplicates get -1, -2, …) and explicit <a id/name>. */
export function pageAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  const lines = proseLines(text);
  lines.forEach(({ line, raw, text: t }, i) => {
    let heading: string | undefined;
    const atx = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(raw);
    if (atx !== null) heading = atx[1];
    // Setext: a text line followed by === or --- (not a table's separator line).
    const next = lines[i + 1];
    if (
      heading === undefined &&
      next !== undefined &&
      next.line === line + 1 &&
      /^ {0,3}(=+|-+)\s*$/.test(next.text) &&
      t.trim() !== '' &&
      !/^\s*([-*+]|\d+[.)])\s/.test(t) &&
      !t.includes('|')
    )
      heading = raw.trim();
    if (heading !== undefined) {
      const base = slug(heading);
      const n = counts.get(base) ?? 0;
      counts.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of t.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  });
  return anchors;
}

/** A broken link: where, the link, and why. */
export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  problem: string;
}

/** What the link checker needs of the file system (paths relative to the repository root, `/`-separated). */
export interface DocTree {
  exists(path: string): boolean;
  isDirectory(path: string): boolean;
  read(path: string): string;
}

/** Normalises `dir/../x` segments; undefined when the path leaves the repository. */
function joinPath(dir: string, rel: string): string | undefined {
  const out: string[] = [];
  for (const seg of [...dir.split('/'), ...rel.split('/')]) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) return undefined;
      out.pop();
    } else out.push(seg);
  }
  return out.join('/');
}

/**
 * Checks every relative link of `file` (a path relative to the repository root): the target
 * exists, and an `#anchor` (same page or `other.md#anchor`) is one the target Markdown defines.
 * http(s), mailto and other scheme links are not checked. Returns the links checked and the problems.
 */
export function checkLinks(file: string, tree: DocTree): { checked: number; problems: LinkProblem[] } {
  const problems: LinkProblem[] = [];
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '';
  let checked = 0;
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    const a = anchorsOf.get(path) ?? pageAnchors(tree.read(path));
    anchorsOf.set(path, a);
    return a;
  };
  for (const { line, target } of pageLinks(tree.read(file))) {
    if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    checked++;
    const report = (problem: string): void => {
      problems.push({ file, line, target, problem });
    };
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    let resolved = file;
    if (pathPart !== '') {
      const joined = pathPart.startsWith('/') ? joinPath('', pathPart) : joinPath(dir, pathPart);
      if (joined === undefined || !tree.exists(joined)) {
        report('no such file');
        continue;
      }
      resolved = joined;
    }
    if (anchor === undefined || anchor === '') continue;
    if (tree.isDirectory(resolved) || !resolved.toLowerCase().endsWith('.md')) {
      report(`#${anchor} points into a file that is not Markdown`);
      continue;
    }
    if (!anchors(resolved).has(anchor)) report(`no heading or <a id> "${anchor}" in ${resolved}`);
  }
  return { checked, problems };
}
