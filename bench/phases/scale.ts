// Scale: small albums are added until the run has as many open (in their late window) as asked for, then
// the processes' resident memory is read with all of them open.
import { setTimeout as sleep } from 'node:timers/promises';
import { scrape, type Metrics } from '../metrics.js';
import { readMemory } from '../../test/harness/processes.js';
import { albums } from '../../test/harness/rows.js';
import { megabytes, type ProcessMemory, type Scale } from '../report.js';
import type { PhaseContext } from './context.js';

/** The top-up when the scale phase runs; the memory reading whatever the phases. */
export async function runScale(ctx: PhaseContext): Promise<Scale> {
  const { options, stack } = ctx;
  const missingAlbums = options.openAlbums - (await albums.count(stack.pool, { open: true }));
  if (ctx.runs('scale') && missingAlbums > 0) {
    await ctx.runAppPhase(
      'scale top-up',
      ctx.loadPhase(stack.ingress.readyMatch, {
        workload: ctx.workload('x', options.seed + 400, {
          albums: { minChildren: 1, maxChildren: 2, totalShare: options.albums.totalShare },
          maxAlbums: missingAlbums,
        }),
        rate: options.scaleRate,
        durationMs: 3_600_000,
        concurrency: options.concurrency,
      }),
    );
  }

  options.log('bench: reading memory with the albums open');
  stack.sampler.openWindow('open');
  await sleep(3_000, undefined, { signal: options.signal });
  stack.sampler.closeWindow('open');
  const workerMetrics = await scrape(stack.workerMetricsUrl, stack.metricsToken).catch((): Metrics => new Map());
  let runningWorkflows: number | null = null;
  try {
    runningWorkflows = (await stack.temporal.workflow.count(`TaskQueue = "${stack.taskQueue}" AND ExecutionStatus = "Running"`)).count;
  } catch (err) {
    options.log(`bench: could not count running workflows: ${(err as Error).message}`);
  }
  const processes: Record<string, ProcessMemory> = {};
  for (const [name, pid] of Object.entries(stack.watched)) {
    const memory = readMemory(pid);
    processes[name] = {
      peakRssMB: megabytes(stack.sampler.peak('run', name)),
      hwmMB: megabytes(memory?.hwm ?? null),
      rssAtTargetMB: megabytes(memory?.rss ?? null),
    };
  }
  return {
    openAlbums: await albums.count(stack.pool, { open: true }),
    runningWorkflows,
    processes,
    workerCachedWorkflows: workerMetrics.get('temporal_sticky_cache_size') ?? null,
  };
}
