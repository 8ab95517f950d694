import { table } from '../../src/cli/format.js';

/** Rows as a plain-text table with a header rule, columns padded to their widest cell (the CLI's tables). */
export function formatTable(header: string[], rows: string[][]): string {
  return table(header, rows).join('\n');
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
