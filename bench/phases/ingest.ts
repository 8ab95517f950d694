// Ingest against the ceiling: each step sends the same seeded load to the ceiling, then to the ingress
// alone, then to the whole app, and compares their throughput and p99 ack. A warm-up step runs first.
import { ingestPhase, ratio, stepStats, type IngestStep } from '../report.js';
import type { WorkloadOptions } from '../workload.js';
import type { PhaseContext } from './context.js';

async function compare(
  ctx: PhaseContext,
  name: string,
  rate: number | null,
  concurrency: number,
  durationMs: number,
  spec: WorkloadOptions,
): Promise<IngestStep> {
  const { ceiling, ingressAlone, ingress } = ctx.stack;
  const phaseAt = (url: string) => ctx.loadPhase(url, { workload: spec, rate, durationMs, concurrency });
  const ceilingResult = await ctx.runCeilingPhase(name, phaseAt(ceiling.readyMatch));
  const aloneResult = ingressAlone ? await ctx.runIngressAlonePhase(name, phaseAt(ingressAlone.readyMatch)) : undefined;
  const appResult = await ctx.runAppPhase(name, phaseAt(ingress.readyMatch));
  const ceilingStats = stepStats(ceilingResult.records, ceilingResult.truncated);
  const appStats = stepStats(appResult.records, appResult.truncated);
  const aloneStats = aloneResult ? stepStats(aloneResult.records, aloneResult.truncated) : undefined;
  return {
    rate,
    concurrency,
    ceiling: ceilingStats,
    app: appStats,
    throughputRatio: ratio(appStats.acceptedPerS, ceilingStats.acceptedPerS),
    p99Ratio: ratio(appStats.ackMs.p99, ceilingStats.ackMs.p99),
    ...(aloneStats
      ? {
          ingressAlone: {
            stats: aloneStats,
            throughputRatio: ratio(aloneStats.acceptedPerS, ceilingStats.acceptedPerS),
            p99Ratio: ratio(aloneStats.ackMs.p99, ceilingStats.ackMs.p99),
          },
        }
      : {}),
  };
}

/** The warm-up (whatever the phases), then, when the ingest phase runs, one step per rate and the closed loop. */
export async function runIngest(ctx: PhaseContext): Promise<IngestStep[]> {
  const { options } = ctx;
  if (options.warmupSeconds > 0) {
    await compare(
      ctx,
      'warm-up',
      options.rates[0] ?? 50,
      options.concurrency,
      options.warmupSeconds * 1000,
      ctx.workload('w', options.seed),
    );
  }
  const steps: IngestStep[] = [];
  if (!ctx.runs('ingest')) return steps;
  for (const [i, rate] of options.rates.entries()) {
    steps.push(
      await compare(
        ctx,
        ingestPhase(rate),
        rate,
        options.concurrency,
        options.stepSeconds * 1000,
        ctx.workload(`r${i}`, options.seed + 1 + i),
      ),
    );
  }
  steps.push(
    await compare(
      ctx,
      ingestPhase(null),
      null,
      options.closedLoopConcurrency,
      options.stepSeconds * 1000,
      ctx.workload('c', options.seed + 100),
    ),
  );
  return steps;
}
