// The dashboard page's static files: this package's public/ and uPlot from node_modules. Only
// the paths listed here are served from disk, each read once and kept.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS } from './respond.js';

/** Static assets: path -> [file, content type]. Nothing else is served from disk. */
function assets(): Map<string, { file: string; type: string }> {
  const here = dirname(fileURLToPath(import.meta.url)); // dist/src
  const pub = join(here, '..', '..', 'public');
  const require = createRequire(import.meta.url);
  const uplotDir = join(dirname(require.resolve('uplot/package.json')), 'dist');
  return new Map([
    ['/', { file: join(pub, 'index.html'), type: 'text/html; charset=utf-8' }],
    ['/app.js', { file: join(pub, 'app.js'), type: 'text/javascript; charset=utf-8' }],
    ['/app.css', { file: join(pub, 'app.css'), type: 'text/css; charset=utf-8' }],
    [
      '/vendor/uPlot.iife.min.js',
      { file: join(uplotDir, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
    ],
    ['/vendor/uPlot.min.css', { file: join(uplotDir, 'uPlot.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
}

export class StaticFiles {
  private readonly files = assets();
  private readonly cache = new Map<string, Buffer>();

  /** Answers GET/HEAD of a listed path with its file; anything else with 404. */
  serve(path: string, method: string, res: ServerResponse): void {
    const asset = this.files.get(path);
    if (!asset || (method !== 'GET' && method !== 'HEAD')) {
      res.writeHead(404, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('not found\n');
      return;
    }
    let buf = this.cache.get(path);
    if (!buf) {
      buf = readFileSync(asset.file);
      this.cache.set(path, buf);
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': asset.type, 'Cache-Control': 'no-cache' });
    res.end(method === 'HEAD' ? undefined : buf);
  }
}
