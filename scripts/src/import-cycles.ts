// Finds import cycles among the TypeScript files of one package. Every relative module reference
// counts: `import`, `import type`, `export ... from`, `import('…')` and `import('…').T` type
// queries — a type-only cycle still ties the files together for readers and for the compiler.
// Package-to-package cycles are already impossible (tsc project references refuse them).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const SKIP_DIRS = new Set(['node_modules', 'dist']);

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!SKIP_DIRS.has(name) && !name.startsWith('.')) tsFiles(path, out);
    } else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
      out.push(path);
    }
  }
  return out;
}

/** Relative module specifiers a file refers to, by any form of import or re-export. */
export function moduleReferences(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specs.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const e = node.moduleReference.expression;
      if (ts.isStringLiteral(e)) specs.push(e.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const a = node.arguments[0];
      if (a && ts.isStringLiteralLike(a)) specs.push(a.text);
    } else if (ts.isImportTypeNode(node)) {
      const a = node.argument;
      if (ts.isLiteralTypeNode(a) && ts.isStringLiteral(a.literal)) specs.push(a.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs.filter((s) => s.startsWith('./') || s.startsWith('../'));
}

/** The file a relative specifier names (NodeNext style: `./x.js` is `./x.ts`), if it is one of `files`. */
function resolveSpecifier(from: string, spec: string, files: ReadonlySet<string>): string | undefined {
  const base = resolve(dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => files.has(c));
}

/** The import graph of the .ts files under `dir`: file -> files it refers to. */
export function importGraph(dir: string): Map<string, string[]> {
  const files = tsFiles(dir);
  const set = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const targets = moduleReferences(f, readFileSync(f, 'utf8'))
      .map((s) => resolveSpecifier(f, s, set))
      .filter((t): t is string => t !== undefined);
    graph.set(f, [...new Set(targets)]);
  }
  return graph;
}

/**
 * Strongly connected components with more than one file, or a file importing itself (Tarjan).
 * Each is one cycle group; file names relative to `base`, sorted.
 */
export function importCycles(graph: Map<string, string[]>, base: string): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) groups.push(group.map((f) => relative(base, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return groups;
}

/** Import cycles of every package directory under `packagesDir`, keyed by package directory name. */
export function packageImportCycles(packagesDir: string): Map<string, string[][]> {
  const out = new Map<string, string[][]>();
  for (const name of readdirSync(packagesDir).sort()) {
    const dir = join(packagesDir, name);
    if (!statSync(dir).isDirectory()) continue;
    out.set(name, importCycles(importGraph(dir), dir));
  }
  return out;
}
