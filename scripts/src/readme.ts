import type { FixtureOutput } from './builder.js';

export function renderReadme(r: FixtureOutput): string {
  return `# Fixture chain\n\nhead ${r.stats.headHash}\n`;
}
