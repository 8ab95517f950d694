/** Prints rows as a plain-text table with a header rule, columns padded to their widest cell. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

export function megabytes(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MB`;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Polls `check` until it reports done or the time is up; returns its last detail either way. */
export async function waitFor(
  check: () => Promise<{ done: boolean; detail: string }>,
  timeoutMs: number,
  intervalMs = 1_000,
): Promise<{ done: boolean; detail: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check().catch((err: unknown) => ({ done: false, detail: (err as Error).message }));
    if (result.done || Date.now() > deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
