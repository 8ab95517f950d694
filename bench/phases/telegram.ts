// The Telegram route's ack beside the UnifyPort route's: the same albums at the same offered rate, sent
// to the whole app once as UnifyPort events and once as a bot's Telegram Updates, one right after the
// other. Telegram holds a chat's next updates until the current one is answered, so its ack is what
// a bot's throughput rides on.
import { stepStats, type TelegramStep } from '../report.js';
import type { PhaseContext } from './context.js';

export async function runTelegram(ctx: PhaseContext): Promise<TelegramStep | null> {
  if (!ctx.runs('telegram')) return null;
  const { options, stack } = ctx;
  const rate = options.rates[0] ?? 100;
  const spec = { rate, durationMs: options.stepSeconds * 1000, concurrency: options.concurrency };
  const seed = options.seed + 300;
  const unifyport = await ctx.runAppPhase(
    `telegram step: UnifyPort route ${rate}/s`,
    ctx.loadPhase(stack.ingress.readyMatch, { ...spec, workload: ctx.workload('tu', seed) }),
  );
  const { bot, botId, secretToken } = stack.telegram;
  const telegram = await ctx.runAppPhase(
    `telegram step: Telegram route ${rate}/s`,
    ctx.loadPhase(stack.ingress.readyMatch, {
      ...spec,
      workload: ctx.workload('tt', seed, { telegram: { workspace: stack.workspace, botId } }),
      telegram: { bot, secretToken },
    }),
  );
  return {
    rate,
    concurrency: options.concurrency,
    unifyport: stepStats(unifyport.records, unifyport.truncated),
    telegram: stepStats(telegram.records, telegram.truncated),
  };
}
