// The knee search: sustained steps at rising offered rates, every child's attachment downloaded (unless
// --no-media), each settled before the next; the highest rate whose completion p99 (total known) holds
// its target. The first step's CPU per child is the CPU target's figure when it starts at that rate.
import { endToEnd } from '../end-to-end.js';
import { attachmentOutcomes, mediaSettledOf, recordedDecisions } from '../../test/harness/rows.js';
import { acceptedChildren, newChildren } from '../records.js';
import { appCpuMsPerChild, kneePhase, kneeStepMet, type Knee, type KneeStep } from '../report.js';
import type { PhaseContext } from './context.js';

export async function runKnee(ctx: PhaseContext): Promise<Knee> {
  const { options, stack } = ctx;
  const knee: Knee = { steps: [], highestMet: null };
  if (!ctx.runs('knee')) return knee;
  for (let rate = options.kneeStartRate; rate <= options.kneeMaxRate; rate += options.kneeStepRate) {
    const name = kneePhase(rate);
    const { records } = await ctx.runAppPhase(
      name,
      ctx.loadPhase(stack.ingress.readyMatch, {
        workload: ctx.workload(`k${rate}-`, options.seed + 500 + rate, { media: ctx.media }),
        rate,
        durationMs: options.kneeSeconds * 1000,
        concurrency: options.concurrency,
      }),
      { media: ctx.media !== undefined, countHistories: false },
    );
    const workflowIds = [...acceptedChildren(records).keys()];
    const figures = endToEnd(
      name,
      records,
      {
        decisions: await recordedDecisions(stack.pool, workflowIds),
        mediaSettled: ctx.media ? await mediaSettledOf(stack.pool, workflowIds) : null,
        attachments: ctx.media ? await attachmentOutcomes(stack.pool, workflowIds) : null,
      },
      options.quietPeriodMs,
    );
    const cpu = ctx.cpu.find((phase) => phase.phase === `${name}, app`);
    const step: KneeStep = {
      rate,
      childrenPerS: figures.childrenPerS,
      albums: figures.withTotal.albums,
      p99Ms: figures.withTotal.ms.p99,
      cpuMsPerChild: cpu ? appCpuMsPerChild(cpu, newChildren(records)) : null,
      met: kneeStepMet(figures.withTotal.ms.p99),
    };
    knee.steps.push(step);
    options.log(`bench: ${name}: ${step.childrenPerS} children/s, p99 ${step.p99Ms} ms, ${step.cpuMsPerChild} CPU ms per child`);
    if (!step.met) break;
    knee.highestMet = step.childrenPerS;
  }
  return knee;
}
