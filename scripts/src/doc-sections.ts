// Facts of the code that hand-written pages state: each stands in its page between
// `<!-- generated: NAME -->` and `<!-- /generated -->`, is written there by `npm run docs` from the
// code it describes, and scripts/test/docs-generated.test.ts fails when a committed page holds
// anything else, so prose around a fact can change but the fact cannot drift from the code.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { INLINE_COST_LIMIT, INLINE_TRY_WORK, METHODS, UNSERVED_METHODS } from '@chainnode/rpc';
import type { MethodName } from '@chainnode/rpc';
import { code, table } from './markdown.js';

/** One generated section: the page it stands in (under docs/), its name and its text. */
export interface DocSection {
  file: string;
  name: string;
  text: string;
}

const SCOPE = '@chainnode/';

/** Each workspace package under packages/ with the workspace packages it depends on, by name. */
export function packageDependencies(repoRoot: string): { name: string; deps: string[] }[] {
  const dir = join(repoRoot, 'packages');
  return readdirSync(dir)
    .sort()
    .map((folder) => {
      const manifest = JSON.parse(readFileSync(join(dir, folder, 'package.json'), 'utf8')) as {
        name: string;
        dependencies?: Record<string, string>;
      };
      const deps = Object.keys(manifest.dependencies ?? {})
        .filter((d) => d.startsWith(SCOPE))
        .map((d) => d.slice(SCOPE.length))
        .sort();
      return { name: manifest.name.slice(SCOPE.length), deps };
    });
}

/** The methods of the method table that may run on the offload pool, in the table's order. */
export function offloadedMethods(): MethodName[] {
  return (Object.keys(METHODS) as MethodName[]).filter((m) => def(m).offload === true);
}

function def(m: MethodName): { offload?: boolean; estimateCost?: unknown; interruptible?: boolean } {
  return METHODS[m] as { offload?: boolean; estimateCost?: unknown; interruptible?: boolean };
}

function listText(names: readonly string[]): string {
  const spans = names.map(code);
  return spans.length <= 1 ? (spans[0] ?? '') : `${spans.slice(0, -1).join(', ')} and ${spans.at(-1)}`;
}

function dependencyTable(repoRoot: string): string {
  const rows = packageDependencies(repoRoot).map(({ name, deps }) => [
    code(`packages/${name}`),
    deps.length === 0 ? '—' : deps.map(code).join(', '),
  ]);
  return table(['package', 'depends on (workspace packages, from its package.json)'], rows);
}

function offloadedText(): string {
  const byCost = offloadedMethods().filter((m) => def(m).estimateCost !== undefined);
  const always = offloadedMethods().filter((m) => def(m).estimateCost === undefined);
  const lines = [
    `The methods marked \`offload\` in the method table run on the offload pool's worker threads (each with its own handle on the datadir) when the server has one, not on the app thread: ${listText(byCost)} when the call's estimated cost is above ${INLINE_COST_LIMIT} (\`INLINE_COST_LIMIT\`; cheaper calls run inline at once)`,
  ];
  if (always.length > 0) lines.push(`${listText(always)} always`);
  const tried = offloadedMethods().filter((m) => def(m).interruptible === true);
  const first =
    tried.length === 0
      ? ''
      : ` Of those, ${listText(tried)}, estimated by the gas they may burn (the cap when a call names none), first run on the app thread for up to ${INLINE_TRY_WORK.toLocaleString('en-US')} units of work (\`INLINE_TRY_WORK\`: an opcode 1, a state read 100; a few ms) and go to a worker, run again from the start, only past it.`;
  return `${lines.join('; ')}.${first} Every other method runs on the app thread.`;
}

function unservedTable(): string {
  const rows = Object.entries(UNSERVED_METHODS).map(([name, why]) => [code(name), why]);
  return table(['method', 'why'], rows);
}

/** Every generated section, in a fixed order. */
export function docSections(repoRoot: string): DocSection[] {
  return [
    { file: 'architecture.md', name: 'package-dependencies', text: dependencyTable(repoRoot) },
    { file: 'architecture.md', name: 'offloaded-methods', text: offloadedText() },
    { file: 'json-rpc.md', name: 'unserved-methods', text: unservedTable() },
  ];
}

const open = (name: string): string => `<!-- generated: ${name} -->`;
const CLOSE = '<!-- /generated -->';

/** `page` with the body of `section`'s markers replaced by its text; throws when a marker is missing. */
export function spliceSection(page: string, section: DocSection): string {
  const start = page.indexOf(open(section.name));
  const end = start < 0 ? -1 : page.indexOf(CLOSE, start);
  if (start < 0 || end < 0)
    throw new Error(`docs/${section.file} has no \`${open(section.name)}\` … \`${CLOSE}\` markers`);
  return `${page.slice(0, start)}${open(section.name)}\n${section.text}\n${page.slice(end)}`;
}
