// The three webhook routes side by side: the same albums at the same offered rate, sent to the whole app
// as UnifyPort events, as a bot's Telegram Updates and as a LINE channel's image sets (one event per
// request), one right after the other; each with its ack and what its ingress and the whole app spent.
// Telegram and LINE hold a chat's next webhooks until the current one is answered, so the ack is what a
// bot's throughput rides on.
import { round, routeLabels, stepStats, type RouteName, type RouteStep, type RoutesStep } from '../report.js';
import type { LoadPhase } from '../load.js';
import type { PhaseContext } from './context.js';

export async function runRoutes(ctx: PhaseContext): Promise<RoutesStep | null> {
  if (!ctx.runs('routes')) return null;
  const { options, stack } = ctx;
  const rate = options.rates[0] ?? 100;
  const spec = { rate, durationMs: options.stepSeconds * 1000, concurrency: options.concurrency };
  const seed = options.seed + 300;
  const { workspace } = stack;
  const phases: Array<[RouteName, LoadPhase]> = [
    ['unifyport', ctx.loadPhase(stack.ingress.readyMatch, { ...spec, workload: ctx.workload('tu', seed) })],
    [
      'telegram',
      ctx.loadPhase(stack.ingress.readyMatch, {
        ...spec,
        workload: ctx.workload('tt', seed, { telegram: { workspace, botId: stack.telegram.botId } }),
        telegram: { bot: stack.telegram.bot, secretToken: stack.telegram.secretToken },
      }),
    ],
    [
      'line',
      ctx.loadPhase(stack.ingress.readyMatch, {
        ...spec,
        workload: ctx.workload('tl', seed, { line: { workspace, destination: stack.line.destination } }),
        line: { channel: stack.line.channel, channelSecret: stack.line.channelSecret },
      }),
    ],
  ];
  const routes: RouteStep[] = [];
  for (const [route, phase] of phases) {
    const name = routesPhase(route, rate);
    const result = await ctx.runAppPhase(name, phase);
    const cpu = ctx.cpu.find((entry) => entry.phase === `${name}, app`)!;
    const requests = result.records.length;
    routes.push({
      route,
      phase: name,
      stats: stepStats(result.records, result.truncated),
      ingressCpuMsPerRequest: requests > 0 ? round(((cpu.cpuS.ingress ?? 0) * 1000) / requests, 2) : null,
    });
  }
  return { rate, concurrency: options.concurrency, routes };
}

/** The routes step's phase of one route (its CPU and Temporal figures are under this name). */
export function routesPhase(route: RouteName, rate: number): string {
  return `routes step: ${routeLabels[route]} route ${rate}/s`;
}
