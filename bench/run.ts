// `npm run bench`: starts the whole stack on this machine (bench/stack.ts), runs the phases
// (bench/phases/: ingest, routes, tracing, the media store, outbound delivery, sustained, burst, the cost baseline, the knee search,
// scale), checks correctness, and reports as JSON under
// bench/results/ and as the run section of BENCHMARKS.md, in place of the previous run's. Everything it
// started is stopped and its databases dropped, also on failure and Ctrl-C.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkCorrectness } from './correctness.js';
import { endToEnd } from './end-to-end.js';
import { defaultOptions, parseOptions, type BenchOptions } from './options.js';
import { runBurst } from './phases/burst.js';
import { PhaseContext } from './phases/context.js';
import { runDelivery } from './phases/delivery.js';
import { runIngest } from './phases/ingest.js';
import { runKnee } from './phases/knee.js';
import { runMediaStore } from './phases/media-store.js';
import { runScale } from './phases/scale.js';
import { runBaseline, runSustained } from './phases/sustained.js';
import { runRoutes } from './phases/routes.js';
import { runTracing } from './phases/tracing.js';
import { countLogProblems } from '../test/harness/processes.js';
import { Cleanups } from '../test/harness/cleanups.js';
import { attachmentOutcomes, mediaSettledOf } from '../test/harness/rows.js';
import { acceptedChildren } from './records.js';
import { renderMarkdown, withRunSection } from './markdown.js';
import { evaluateTargets, round, type BenchReport } from './report.js';
import { startStack } from './stack.js';
import { sourceVersion, stackVersions } from './versions.js';

export interface BenchOutcome {
  report: BenchReport;
  jsonPath: string;
  markdown: string;
}

export async function runBench(overrides: Partial<BenchOptions> = {}): Promise<BenchOutcome> {
  const options: BenchOptions = { ...defaultOptions, ...overrides };
  const startedAt = new Date();
  const runTag = `${startedAt.toISOString().replace(/[:.]/g, '-')}-${crypto.randomBytes(3).toString('hex')}`;
  const runDir = path.join(options.resultsDir, runTag);
  const measuredSource = sourceVersion().catch(() => 'unknown');
  fs.mkdirSync(runDir, { recursive: true });
  const closers = new Cleanups((line) => options.log(`bench: ${line}`));

  try {
    const stack = await startStack(options, runTag, runDir, closers);
    const ctx = new PhaseContext(options, stack);
    const ingest = await runIngest(ctx);
    const routes = await runRoutes(ctx);
    const tracing = await runTracing(ctx);
    const mediaStore = await runMediaStore(ctx);
    const delivery = await runDelivery(ctx);
    const sustainedPhase = await runSustained(ctx);
    const burstPhase = await runBurst(ctx);
    const baselinePhase = await runBaseline(ctx);
    const knee = await runKnee(ctx);
    const scale = await runScale(ctx);

    options.log('bench: checking correctness');
    const { correctness, decisions } = await checkCorrectness(stack, ctx.appPhases, ctx.ingressAloneChildren, options);
    const endToEndFigures = [];
    for (const phase of ctx.appPhases.filter((p) => p.name !== 'warm-up')) {
      const workflowIds = [...acceptedChildren(phase.records).keys()];
      const outcome = {
        decisions,
        mediaSettled: phase.media ? await mediaSettledOf(stack.pool, workflowIds) : null,
        attachments: phase.media ? await attachmentOutcomes(stack.pool, workflowIds) : null,
      };
      endToEndFigures.push(endToEnd(phase.name, phase.records, outcome, options.quietPeriodMs));
    }

    const versions = await stackVersions(stack, measuredSource, !options.temporalAddress);
    const appLogs: Record<string, number> = {};
    await stack.ingress.stop();
    await stack.worker.stop();
    countLogProblems(path.join(runDir, 'ingress.log'), appLogs);
    countLogProblems(path.join(runDir, 'worker.log'), appLogs);
    countLogProblems(path.join(runDir, 'delivery-engine.log'), appLogs);

    const reportBody: Omit<BenchReport, 'targets'> = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpuModel: os.cpus()[0]?.model ?? 'unknown CPU',
        cores: os.cpus().length,
        memoryGB: round(os.totalmem() / 1e9, 1),
        os: `${os.type()} ${os.release()}`,
      },
      versions,
      configuration: {
        rates: options.rates,
        stepSeconds: options.stepSeconds,
        concurrency: options.concurrency,
        closedLoopConcurrency: options.closedLoopConcurrency,
        sustainedRate: options.sustainedRate,
        sustainedSeconds: options.sustainedSeconds,
        burstAlbumsPerSecond: options.burstAlbumsPerSecond,
        burstSeconds: options.burstSeconds,
        knee: {
          startRate: options.kneeStartRate,
          stepRate: options.kneeStepRate,
          maxRate: options.kneeMaxRate,
          seconds: options.kneeSeconds,
        },
        mediaStore: { rate: options.mediaStoreRate, seconds: options.mediaStoreSeconds },
        delivery: {
          notifications: options.deliveryNotifications,
          concurrency: options.deliveryConcurrency,
          rateLimit: options.deliveryRateLimit,
          outageSeconds: options.deliveryOutageSeconds,
          backlog: options.deliveryBacklog,
        },
        openAlbums: options.openAlbums,
        scaleRate: options.scaleRate,
        QUIET_PERIOD_MS: options.quietPeriodMs,
        MAX_WAIT_MS: options.maxWaitMs,
        LATE_WINDOW_MS: options.lateWindowMs,
        albums: options.albums,
        redeliveryShare: options.redeliveryShare,
        seed: options.seed,
        media: stack.media
          ? { files: stack.media.files.length, firstByteMs: options.mediaFirstByteMs, megabytesPerSecond: options.mediaMegabytesPerSecond }
          : false,
        profile: options.profile,
      },
      ingest,
      routes,
      tracing,
      mediaStore,
      delivery,
      endToEnd: endToEndFigures,
      sustainedPhase,
      temporalCost: ctx.appPhases.map((phase) => phase.cost),
      temporalCounts: ctx.counts,
      burstPhase,
      baselinePhase,
      knee,
      scale,
      correctness,
      cpu: ctx.cpu,
      appLogs,
    };
    const report: BenchReport = { ...reportBody, targets: evaluateTargets(reportBody, options.openAlbums) };
    const markdown = renderMarkdown(report);
    const jsonPath = path.join(runDir, 'report.json');
    fs.writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    if (options.benchmarksPath) {
      const current = fs.existsSync(options.benchmarksPath) ? fs.readFileSync(options.benchmarksPath, 'utf8') : null;
      fs.writeFileSync(options.benchmarksPath, withRunSection(current, markdown));
    }
    return { report, jsonPath, markdown };
  } finally {
    await closers.closeAll();
  }
}

async function main(): Promise<void> {
  const controller = new AbortController();
  let interrupted = 0;
  const interrupt = (signal: NodeJS.Signals) => {
    interrupted += 1;
    if (interrupted > 1) process.exit(130);
    process.stderr.write(`\nbench: ${signal}, stopping everything it started (again to exit at once)\n`);
    controller.abort(new Error(`interrupted by ${signal}`));
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  try {
    const parsed = parseOptions(process.argv.slice(2));
    if (parsed === null) return;
    const { report, jsonPath, markdown } = await runBench({ ...parsed, signal: controller.signal });
    process.stdout.write(`${markdown}\n`);
    process.stdout.write(`JSON: ${jsonPath}\n`);
    if (!report.correctness.ok) {
      process.stderr.write('bench: correctness failed (see the Correctness section)\n');
      process.exitCode = 1;
    }
    if (report.mediaStore && !report.mediaStore.unavailable && !report.mediaStore.ok) {
      process.stderr.write('bench: the media store check failed (see the Media store section)\n');
      process.exitCode = 1;
    }
    if (report.delivery && !report.delivery.ok) {
      process.stderr.write('bench: the delivery check failed (see the Outbound delivery section)\n');
      process.exitCode = 1;
    }
  } catch (err) {
    process.stderr.write(`bench: ${controller.signal.aborted ? 'interrupted' : 'failed'}: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = controller.signal.aborted ? 130 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
