// 10-photo albums whose children all arrive at once, held to the signals-per-child target; every child's
// attachment downloaded from the media server (unless --no-media).
import type { PhaseContext } from './context.js';

/** Runs the phase when asked for; answers its name either way (the report names the phase its target is held to). */
export async function runBurst(ctx: PhaseContext): Promise<string> {
  const { options, stack } = ctx;
  const name = `bursts of 10 at ${options.burstAlbumsPerSecond} albums/s`;
  if (!ctx.runs('burst')) return name;
  await ctx.runAppPhase(
    name,
    ctx.loadPhase(stack.ingress.readyMatch, {
      workload: ctx.workload('b', options.seed + 300, {
        pattern: 'burst',
        albums: { ...options.albums, minChildren: 10, maxChildren: 10 },
        media: ctx.media,
      }),
      rate: options.burstAlbumsPerSecond * 10,
      durationMs: options.burstSeconds * 1000,
      concurrency: options.concurrency,
    }),
    { media: ctx.media !== undefined, countHistories: true },
  );
  return name;
}
