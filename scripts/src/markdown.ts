// Markdown building blocks of the generated reference pages: escaping for table cells, code
// spans, tables.

/** Escapes text for a table cell: code spans are kept (only `|` escaped), elsewhere `<`, `>`, `*` and `|`. */
export function cell(text: string): string {
  const outside: Record<string, string> = { '<': '&lt;', '>': '&gt;', '*': '\\*', '|': '\\|' };
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part.replace(/\|/g, '\\|') : part.replace(/[<>*|]/g, (c) => outside[c] ?? c)))
    .join('');
}

/** `text` as a code span. */
export function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/**
 * A Markdown table, each column padded to its widest cell (as Biome formats tables, so the
 * generated pages pass `biome check`); every cell already escaped (see cell).
 */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const width = (text: string): number => [...text].length;
  const widths = head.map((h, i) => Math.max(3, width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: readonly string[]): string =>
    `| ${widths.map((w, i) => (cells[i] ?? '') + ' '.repeat(w - width(cells[i] ?? ''))).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
