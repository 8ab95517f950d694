// The end-to-end phase held to the completion target: the stream of albums at a steady offered rate,
// every child's attachment downloaded from the media server (unless --no-media). The cost baseline
// phase sends the same stream to the app configured as one signal per child, one download activity per
// attachment, and counts its histories beside.
import type { LoadPhase } from '../load.js';
import type { PhaseContext } from './context.js';

function sustainedLoad(ctx: PhaseContext, idPrefix: string): Omit<LoadPhase, 'url'> {
  const { options } = ctx;
  const { url: _url, ...load } = ctx.loadPhase('', {
    workload: ctx.workload(idPrefix, options.seed + 200, { media: ctx.media }),
    rate: options.sustainedRate,
    durationMs: options.sustainedSeconds * 1000,
    concurrency: options.concurrency,
  });
  return load;
}

/** Runs the phase when asked for; answers its name either way (the report names the phase its target is held to). */
export async function runSustained(ctx: PhaseContext): Promise<string> {
  const { options, stack } = ctx;
  const name = `sustained ${options.sustainedRate}/s`;
  if (!ctx.runs('sustained')) return name;
  await ctx.runAppPhase(
    name,
    { ...sustainedLoad(ctx, 's'), url: stack.ingress.readyMatch },
    { media: ctx.media !== undefined, countHistories: true },
  );
  return name;
}

/** The same stream (other ids, the same shapes) against the cost baseline's configuration; answers its name. */
export async function runBaseline(ctx: PhaseContext): Promise<string> {
  const name = `baseline: sustained ${ctx.options.sustainedRate}/s, one signal per child, one download activity per attachment`;
  if (ctx.runs('baseline')) await ctx.runBaselinePhase(name, sustainedLoad(ctx, 'sb'), ctx.media !== undefined);
  return name;
}
