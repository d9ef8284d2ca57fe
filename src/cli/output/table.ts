// Plain-text tables for humans: left-aligned columns sized to their widest cell, two spaces apart,
// upper-case headers, no borders (so `grep` and `awk` still work on the output).

export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n') + '\n';
}

/** "key: value" lines with the keys aligned, for one object (job get, run get). */
export function renderFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${(k + ':').padEnd(width + 1)}  ${v}`).join('\n') + '\n';
}
