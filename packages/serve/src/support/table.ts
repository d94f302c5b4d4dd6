// Aligned plain-text tables for the demo's and the simulations' reports: text columns left-aligned, number columns right-aligned.

export interface Column {
  readonly header: string;
  readonly align: 'left' | 'right';
}

/** Renders a header row and body rows, each cell padded to its column's widest entry, two spaces apart. */
export function formatTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string[] {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (columns[i]!.align === 'left' ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...rows.map(line)];
}
