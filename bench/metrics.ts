// The app's Prometheus metrics as the bench reads them: scraped before and after a phase, subtracted.
export type Metrics = Map<string, number>;

/** Sums every sample of each metric name (labels ignored); histograms keep their _sum and _count. */
function parsePrometheus(text: string): Metrics {
  const metrics: Metrics = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const value = Number(match[2]);
    if (Number.isFinite(value)) metrics.set(match[1]!, (metrics.get(match[1]!) ?? 0) + value);
  }
  return metrics;
}

/** `token`: the bearer token albumflow's own /metrics needs (the worker's Temporal metrics need none). */
export async function scrape(url: string, token?: string): Promise<Metrics> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return parsePrometheus(await response.text());
}

export function delta(after: Metrics, before: Metrics, name: string): number {
  return (after.get(name) ?? 0) - (before.get(name) ?? 0);
}
