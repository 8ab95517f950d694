// Tracing's cost: three apps alike but for OpenTelemetry — off (no SDK loaded), on with every trace
// sampled out, and on at 100% sampling exporting to an OTLP receiver of the run — take the same ingest
// load in turn, twice in alternating order, so that a drift of the machine's speed falls on all three.
// The difference between two rounds of the same app is the noise the others are held to.
import { round, stepStats, type TracingRun, type TracingStep, type TracingVariant } from '../report.js';
import { newChildren } from '../records.js';
import { startOtlpReceiver } from '../../test/harness/servers/otlp.js';
import type { VariantApp } from '../stack.js';
import type { PhaseContext } from './context.js';

const rounds = 2;

/** The OpenTelemetry settings of each app (OTLP/JSON, which the run's receiver decodes to count the spans). */
function tracingEnv(variant: TracingVariant, endpoint: string): NodeJS.ProcessEnv {
  if (variant === 'off') return {};
  return {
    OTEL_SERVICE_NAME: serviceOf(variant),
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_TRACES_SAMPLER: variant === 'sampled out' ? 'always_off' : 'always_on',
    // Large enough that no span is dropped at the step's rate (the SDK's default queue holds 2,048).
    OTEL_BSP_MAX_QUEUE_SIZE: '100000',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048',
    OTEL_BSP_SCHEDULE_DELAY: '1000',
  };
}

/** Each app's spans are told apart by its service name. */
function serviceOf(variant: TracingVariant): string {
  return `albumflow-tracing-${variant.replace(/[^a-z0-9]+/g, '-')}`;
}

export async function runTracing(ctx: PhaseContext): Promise<TracingStep | null> {
  if (!ctx.runs('tracing')) return null;
  const { options, stack } = ctx;
  const rate = options.rates[0] ?? 100;
  const receiver = await startOtlpReceiver();
  const variants: TracingVariant[] = ['off', 'sampled out', '100%'];
  const apps = new Map<TracingVariant, VariantApp>();
  const runs: TracingRun[] = [];
  try {
    options.log('bench: tracing step (starting three apps: tracing off, sampled out, at 100%)');
    for (const variant of variants)
      apps.set(variant, await stack.startVariant(`tracing ${variant}`, { env: tracingEnv(variant, receiver.endpoint) }));
    for (let r = 0; r < rounds; r++) {
      // Round 1 in the order off, sampled out, 100%; round 2 the other way round.
      for (const variant of r % 2 === 0 ? variants : [...variants].reverse()) {
        const app = apps.get(variant)!;
        const name = `tracing step: ${variant}, round ${r + 1}`;
        const result = await ctx.runVariantPhase(
          name,
          app,
          ctx.loadPhase(app.url, {
            rate,
            durationMs: options.stepSeconds * 1000,
            concurrency: options.concurrency,
            // The same albums for each app in a round; ids of their own, so that no two apps share a workflow.
            workload: ctx.workload(`tr${r}-${variants.indexOf(variant)}`, options.seed + 400 + r),
          }),
        );
        const cpu = ctx.cpu.find((entry) => entry.phase === `${name}, ${app.name}`)!;
        const children = newChildren(result.records);
        const appCpuS = [`${app.name} ingress`, `${app.name} worker`, 'temporal', 'postgres'].reduce(
          (sum, process) => sum + (cpu.cpuS[process] ?? 0),
          0,
        );
        runs.push({
          variant,
          round: r + 1,
          stats: stepStats(result.records, result.truncated),
          children,
          ingressCpuMsPerRequest:
            result.records.length > 0 ? round(((cpu.cpuS[`${app.name} ingress`] ?? 0) * 1000) / result.records.length, 2) : null,
          appCpuMsPerChild: children > 0 ? round((appCpuS * 1000) / children, 1) : null,
        });
      }
    }
  } finally {
    for (const app of apps.values()) await app.stop();
  }
  // Stopping an app exports what it still buffered: every span of every app is in by now.
  const spans = Object.fromEntries(
    variants.map((variant) => [variant, receiver.spans.filter((span) => span.service === serviceOf(variant)).length]),
  ) as Record<TracingVariant, number>;
  const tracedChildren = runs.filter((run) => run.variant === '100%').reduce((sum, run) => sum + run.children, 0);
  const refused = receiver.refused;
  await receiver.close();
  return {
    rate,
    concurrency: options.concurrency,
    runs,
    spans,
    spansPerChild: tracedChildren > 0 ? round(spans['100%'] / tracedChildren, 1) : null,
    spansRefused: refused,
  };
}
