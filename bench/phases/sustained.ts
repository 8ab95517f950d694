// The end-to-end phase held to the completion target: the stream of albums at a steady offered rate,
// every child's attachment downloaded from the media server (unless --no-media).
import type { PhaseContext } from './context.js';

/** Runs the phase when asked for; answers its name either way (the report names the phase its target is held to). */
export async function runSustained(ctx: PhaseContext): Promise<string> {
  const { options, stack } = ctx;
  const name = `sustained ${options.sustainedRate}/s`;
  if (!ctx.runs('sustained')) return name;
  await ctx.runAppPhase(
    name,
    ctx.loadPhase(stack.ingress.readyMatch, {
      workload: ctx.workload('s', options.seed + 200, { media: ctx.media }),
      rate: options.sustainedRate,
      durationMs: options.sustainedSeconds * 1000,
      concurrency: options.concurrency,
    }),
    { media: ctx.media !== undefined, countHistories: true },
  );
  return name;
}
