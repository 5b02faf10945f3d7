// Imports inside each package run one way: no file reaches itself through relative imports,
// type-only ones included (ENGINEERING: no import cycles).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importCycles, importGraph, moduleReferences, packageImportCycles } from '../src/import-cycles.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..'); // scripts/dist/test

describe('import cycles', () => {
  test('the detector sees every form of reference and finds type-only and long cycles', () => {
    // Each form of reference and the relative module it names (a package name is none).
    const forms: [line: string, names: string[]][] = [
      ["import { a } from './a.js';", ['./a.js']],
      ["import type { B } from './b.js';", ['./b.js']],
      ["export { c } from './c.js';", ['./c.js']],
      ["export * from '../d.js';", ['../d.js']],
      ["const e = await import('./e.js');", ['./e.js']],
      ['type F = import("./f.js").F;', ['./f.js']],
      ["import { g } from '@chainnode/core';", []],
    ];
    const text = forms.map(([line]) => line).join('\n');
    expect(moduleReferences('x.ts', text)).toEqual(forms.flatMap(([, names]) => names));

    const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
    try {
      const write = (name: string, body: string) => {
        mkdirSync(dirname(join(dir, name)), { recursive: true });
        writeFileSync(join(dir, name), body);
      };
      write('src/a.ts', "import type { B } from './b.js';\nexport type A = B;\n");
      write('src/b.ts', "import { c } from './deep/c.js';\nexport type B = string;\nexport const b = c;\n");
      write('src/deep/c.ts', "import type { A } from '../a.js';\nexport const c: A | 1 = 1;\n");
      write('src/ok.ts', "import { b } from './b.js';\nexport const ok = b;\n");
      write('test/self.test.ts', "import './self.test.js';\n");
      write('dist/src/a.ts', "import './a.js';\n"); // build output is not scanned
      expect(importCycles(importGraph(dir), dir)).toEqual([
        ['src/a.ts', 'src/b.ts', 'src/deep/c.ts'],
        ['test/self.test.ts'],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('no package has an import cycle', () => {
    const cycles = packageImportCycles(join(root, 'packages'));
    expect([...cycles.keys()]).toEqual(expect.arrayContaining(['core', 'store', 'rpc', 'server']));
    // Every package has files to check (a wrong path would pass vacuously).
    for (const name of cycles.keys()) expect(importGraph(join(root, 'packages', name)).size).toBeGreaterThan(0);
    expect(Object.fromEntries([...cycles].filter(([, c]) => c.length > 0))).toEqual({});
  });
});
