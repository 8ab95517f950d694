// The markdown of a bench run's section of BENCHMARKS.md (the targets, then the figures behind them), the
// file's header when it does not exist yet, and the file with the run's section in place of the previous
// run's. Pure (no I/O).
import {
  appCpuMsPerChild,
  cpuMsPerChildByProcess,
  duration,
  kneeLabel,
  pct,
  postgresPerChild,
  round,
  routeLabels,
  tracingSummary,
  type BenchReport,
  type DeliveryCheck,
  type DeliveryStep,
  type MediaStoreStep,
  type MediaStoreVariant,
  type TracingRun,
  type TracingVariant,
  type EndToEnd,
  type Knee,
  type PostgresPerChild,
  type StepStats,
  type Target,
} from './report.js';

type Cell = string | number | boolean | null | undefined;

function cell(value: Cell): string {
  if (value === null || value === undefined) return '–';
  return String(value);
}

function table(header: string[], rows: Cell[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}

function failures(stats: StepStats): string {
  const entries = Object.entries(stats.failures);
  return entries.length === 0 ? '0' : entries.map(([status, n]) => `${n}×${status === '0' ? 'no answer' : status}`).join(', ');
}

function met(target: Target): string {
  return target.met === null ? 'n/a' : target.met ? 'yes' : '**no**';
}

/** The routes step: each webhook route of the whole app under the same albums, with its ingest cost. */
function routesSection(report: BenchReport): string {
  const { routes } = report;
  if (!routes) return 'The routes were not compared (the routes phase did not run).';
  return table(
    [`route (the same albums at ${routes.rate} req/s)`, 'req/s acknowledged', 'p50 / p99 ack ms', 'failures', 'ingress CPU ms per request'],
    routes.routes.map((route) => [
      routeLabels[route.route],
      route.stats.acceptedPerS,
      `${cell(route.stats.ackMs.p50)} / ${cell(route.stats.ackMs.p99)}`,
      failures(route.stats),
      route.ingressCpuMsPerRequest,
    ]),
  );
}

/** The tracing step: each app's rounds and mean, and the noise between two rounds of one app. */
function tracingSection(report: BenchReport): string {
  const { tracing } = report;
  if (!tracing) return 'Tracing was not measured (the tracing phase did not run).';
  const summary = tracingSummary(tracing);
  const variants: TracingVariant[] = ['off', 'sampled out', '100%'];
  const roundsOf = (variant: TracingVariant, figure: (run: TracingRun) => number | null) =>
    tracing.runs
      .filter((run) => run.variant === variant)
      .map((run) => cell(figure(run)))
      .join(', ');
  const { off } = summary.means;
  const full = summary.means['100%'];
  const more = (a: number | null, b: number | null) => (a === null || b === null ? '–' : String(round(a - b, 2)));
  return [
    `The same ingest load (UnifyPort, no media) at ${tracing.rate} req/s to three apps alike but for OpenTelemetry, two rounds in ` +
      `alternating order; noise: the largest difference between two rounds of one app. At 100% sampling ${cell(tracing.spansPerChild)} ` +
      `spans per child were exported (OTLP/JSON), costing ${more(full.appCpuMsPerChild, off.appCpuMsPerChild)} CPU-ms more per child ` +
      `for the whole app and ${more(full.ingressCpuMsPerRequest, off.ingressCpuMsPerRequest)} more per request for the ingress` +
      `; the app sampled out exported ${tracing.spans['sampled out']}, the app off ${tracing.spans.off}` +
      (tracing.spansRefused > 0 ? `; the receiver refused ${tracing.spansRefused} exports.` : '.'),
    '',
    table(
      ['app', 'ingress CPU ms per request (rounds)', 'p99 ack ms (rounds)', 'CPU ms per child, the whole app (mean)'],
      [
        ...variants.map((variant) => [
          variant,
          roundsOf(variant, (run) => run.ingressCpuMsPerRequest),
          roundsOf(variant, (run) => run.stats.ackMs.p99),
          summary.means[variant].appCpuMsPerChild,
        ]),
        ['noise', summary.noise.ingressCpuMsPerRequest, summary.noise.ackP99Ms, summary.noise.appCpuMsPerChild],
      ],
    ),
  ].join('\n');
}

/** A size in KB under a megabyte, else in MB (10^3, 10^6 bytes). */
function size(bytes: number): string {
  return bytes < 1e6 ? `${round(bytes / 1e3, 0)} KB` : `${round(bytes / 1e6, 1)} MB`;
}

function signed(value: number): string {
  return value > 0 ? `+${value}` : String(value);
}

/** What a store's check found wrong, or '' when nothing. */
function storeProblems(variant: MediaStoreVariant): string {
  const { check } = variant;
  const problems = [
    ...Object.entries(check.notDownloaded).map(([status, n]) => `${n} ${status}`),
    check.missing > 0 ? `${check.missing} not in the store at their size` : '',
    check.extra > 0 ? `${check.extra} objects no photo names` : '',
    check.downloaded > 0 && check.objects !== check.downloaded ? `${check.objects} objects for ${check.downloaded} photos` : '',
    check.localObjects ? `${check.localObjects} objects in the worker's MEDIA_DIR` : '',
  ].filter(Boolean);
  return problems.length > 0 ? `${variant.store}: ${problems.join(', ')}` : '';
}

/** The media store step: the same downloads on the directory store and on S3, the worker's CPU and RSS on each. */
function mediaStoreSection(step: MediaStoreStep | null | undefined): string {
  if (!step) return 'The media stores were not compared (the media-store phase did not run).';
  if (step.unavailable) return `The media stores were not compared: ${step.unavailable}.`;
  const photos = step.files.filter((file) => file.bytes < 10e6);
  const large = step.files.filter((file) => file.bytes >= 10e6);
  const totalWeight = step.files.reduce((sum, file) => sum + file.weight, 0);
  const largeWeight = large.reduce((sum, file) => sum + file.weight, 0);
  const bytes = photos.map((file) => file.bytes);
  const ratioText = (value: number | null) => (value === null ? '–' : `${value}×`);
  const problems = step.variants.map(storeProblems).filter(Boolean);
  const labels: Record<string, string> = {
    directory: 'directory (MEDIA_DIR)',
    s3: `S3 (${step.variants.find((v) => v.store === 's3')?.location ?? 's3'})`,
  };
  const growth = step.variants
    .map((v) =>
      v.peakRssMB === null || v.photosPeakRssMB === null
        ? null
        : `${signed(round(v.peakRssMB - v.photosPeakRssMB, 1))} MB on ${v.store === 's3' ? 'S3' : 'the directory'}`,
    )
    .filter(Boolean);
  return [
    `The same albums at ${step.rate} req/s for ${step.seconds} s to two apps alike but for the media store, the directory and an S3 ` +
      `bucket on a Versity S3 Gateway of the run: a round of photos (${size(Math.min(...bytes))} to ${size(Math.max(...bytes))}), then ` +
      `two rounds in alternating order with ` +
      (large.length > 0 ? `1 child in ${round(totalWeight / largeWeight, 0)} a ${size(large[0]!.bytes)} video; ` : 'the same; ') +
      `every file's bytes are its own. With the videos, S3 / directory: worker CPU per child ${ratioText(step.ratios.workerCpuPerChild)} ` +
      `(noise between two rounds of one store: ${cell(step.noiseCpuMsPerChild)} ms), ${ratioText(step.ratios.cpuPerChildWithStoreServer)} ` +
      `with the S3 server's; worker peak RSS ${ratioText(step.ratios.workerPeakRss)}` +
      (growth.length > 0 ? `. The videos moved the peak over the photos' by ${growth.join(', ')}` : '') +
      `. The photos' downloads against their floor: the round's albums again without media (no URL, no download), and a bare ` +
      'loop (GET → SHA-256 and size → the same kind of store: a flushed file renamed under its hash, or one PutObject) over ' +
      "the round's files on kept-alive connections" +
      `. Every photo \`downloaded\` and its object in the store once, at its size: ` +
      (step.ok ? 'yes.' : `**no** (${problems.join('; ')}).`),
    '',
    table(
      [
        'store',
        'children / photos downloaded / objects (50 MB videos)',
        'worker CPU ms per child: photos; with videos (rounds)',
        "S3 server's CPU ms per child, with videos",
        'per downloaded photo, CPU ms: the worker (with photos less without) / the floor (ratio)',
        'worker RSS MB: idle / peak, photos / peak, with videos',
      ],
      step.variants.map((variant) => {
        const photoRound = variant.rounds.find((run) => !run.videos);
        const videoRounds = variant.rounds.filter((run) => run.videos);
        return [
          labels[variant.store],
          `${variant.rounds.reduce((sum, run) => sum + run.children, 0)} / ${variant.check.downloaded} / ${variant.check.objects} (${variant.check.largeFiles})`,
          `${cell(photoRound?.workerCpuMsPerChild)}; ${cell(variant.workerCpuMsPerChild)} (${videoRounds.map((run) => cell(run.workerCpuMsPerChild)).join(', ')})`,
          variant.storeServerCpuMsPerChild,
          `${cell(variant.floor.workerCpuMsPerDownload)} (${cell(variant.floor.noMediaCpuMsPerChild === null ? null : round((variant.floor.workerCpuMsPerDownload ?? 0) + variant.floor.noMediaCpuMsPerChild, 1))} less ${cell(variant.floor.noMediaCpuMsPerChild)}) / ${cell(variant.floor.floorCpuMsPerFile)} (${ratioText(variant.floor.ratio)})`,
          `${cell(variant.idleRssMB)} / ${cell(variant.photosPeakRssMB)} / ${cell(variant.peakRssMB)}${variant.peakRssFrom === 'sampled' ? ' (sampled)' : ''}`,
        ];
      }),
    ),
  ].join('\n');
}

/** What a receiver's check found wrong, or '' when nothing. */
function checkProblems(what: string, check: DeliveryCheck): string {
  const problems = [
    check.arrived < check.notifications ? `${check.notifications - check.arrived} of ${check.notifications} never delivered` : '',
    check.outOfOrder > 0 ? `${check.outOfOrder} requests before the one ahead in their album was delivered` : '',
    check.unverified > 0 ? `${check.unverified} requests that did not verify` : '',
  ].filter(Boolean);
  return problems.length > 0 ? `${what}: ${problems.join(', ')}` : '';
}

/** Outbound delivery: the engine against a bare signed POST loop, and the drain of a backlog after an outage. */
function deliverySection(step: DeliveryStep | null | undefined): string {
  if (!step) return 'Outbound delivery was not measured (the delivery phase did not run).';
  const { throughput: t, drain: d } = step;
  const engineShare = t.engine.perS === null ? null : t.engine.perS / t.rateLimit;
  const bound =
    engineShare !== null && engineShare >= 0.9 ? 'the rate limit bounds it' : `${pct(engineShare)} of the rate limit: not the bound`;
  const problems = [
    checkProblems('the engine', t.check),
    t.ceiling.delivered < t.notifications ? `the ceiling: ${t.notifications - t.ceiling.delivered} not answered 2xx` : '',
    checkProblems('the drain', d.check),
    d.withinRateLimit ? '' : `the drain's pace above the rate limit`,
  ].filter(Boolean);
  const times = (value: number | null) => (value === null ? '–' : `${value}×`);
  return [
    `${t.notifications} notifications of ${t.albums} albums to one endpoint (rate limit ${t.rateLimit}/s, the highest) of a receiver that ` +
      `verifies each with standardwebhooks and answers 204 at once, ${step.concurrency} requests in flight; the ceiling signs the same ` +
      `bodies with standardwebhooks and POSTs them over kept-alive connections. The engine: ${times(t.throughputRatio)} the ceiling's ` +
      `notifications/s (${bound}) at ${times(t.cpuRatio)} its CPU per notification. After a ${d.outageS} s outage (503) a backlog of ` +
      `${d.backlog} notifications drained at ${cell(d.drainPerS)}/s from the recovery, ${times(d.rateRatio)} the endpoint's rate limit ` +
      `of ${d.rateLimit}/s (the first after ${cell(d.firstDeliveryS)} s, the schedule's wait; then attempts paced at ${cell(d.pacePerS)}/s). ` +
      `Every notification delivered, in order per album, and the drain within the rate limit: ${step.ok ? 'yes.' : `**no** (${problems.join('; ')}).`}`,
    '',
    table(
      ['sender', 'notifications/s', 'CPU ms per notification', 'PostgreSQL CPU ms per notification'],
      [
        ['the ceiling (a bare signed POST loop)', t.ceiling.perS, t.ceiling.cpuMsPerNotification, null],
        ['the delivery engine', t.engine.perS, t.engine.cpuMsPerNotification, t.engine.postgresCpuMsPerNotification],
      ],
    ),
  ].join('\n');
}

/** The knee searches: each step's children/s, completion p99 (total known) and CPU per child, and the highest that held. */
function kneeSection(knees: Knee[]): string {
  return table(
    [
      'search',
      'Temporal server',
      'p99 target',
      'steps: offered/s → children/s, p99, CPU ms per child, PostgreSQL per child (commits / rows written / WAL KB)',
      'highest within the target',
    ],
    knees.map((knee) => [
      kneeLabel(knee),
      knee.serverName,
      duration(knee.targetMs),
      knee.notMeasured
        ? `not measured: ${knee.notMeasured}`
        : knee.steps
            .map(
              (step) =>
                `${step.rate} → ${step.childrenPerS}, ${duration(step.p99Ms)}${step.met ? '' : ' (missed)'}, ${cell(step.cpuMsPerChild)}` +
                (step.postgresPerChild ? `, ${postgresCell(step.postgresPerChild)}` : ''),
            )
            .join('; '),
      knee.highestMet === null ? null : `${knee.highestMet} children/s`,
    ]),
  );
}

/** PostgreSQL's work per child: commits / rows written / WAL KB. */
function postgresCell(per: PostgresPerChild | null | undefined): string | null {
  return per ? `${per.commits} / ${per.rowsWritten} / ${per.walKB}` : null;
}

/** A phase's decisions: p50 / p99 of the albums with a total, p99 of those without (after their quiet period). */
function decided(e: EndToEnd | undefined): Cell[] {
  if (!e) return [null, null, null, null];
  const side = (albums: number, text: string) => (albums > 0 ? text : null);
  const settled = (p: { p99: number | null } | null) => (p === null ? '–' : duration(p.p99));
  return [
    `${e.withTotal.albums} / ${e.withoutTotal.albums}`,
    side(e.withTotal.albums, `${duration(e.withTotal.ms.p50)} / ${duration(e.withTotal.ms.p99)}`),
    side(e.withoutTotal.albums, duration(e.withoutTotal.ms.p99)),
    e.media ? `${settled(e.withTotal.mediaSettledMs)} / ${settled(e.withoutTotal.mediaSettledMs)}` : 'no URLs',
  ];
}

/** The ingest steps against the ceiling, or why there are none. */
function ingestSection(report: BenchReport): string {
  if (report.ingest.length === 0) return 'The ingest was not compared with the ceiling (the ingest phase did not run).';
  return table(
    [
      'offered',
      'ceiling req/s',
      'ceiling p50 / p99 ms',
      'app req/s',
      'app p50 / p99 ms',
      'app: req/s ratio / p99 ratio',
      'ingress alone req/s',
      'ingress alone p50 / p99 ms',
      'ingress alone: req/s ratio / p99 ratio',
      'failures: app / ingress alone',
    ],
    report.ingest.map((step) => {
      const offered = step.rate === null ? `closed loop, ${step.concurrency} in flight` : `${step.rate} req/s`;
      const figures = (stats: StepStats, throughputRatio: number | null, p99Ratio: number | null): Cell[] => [
        stats.acceptedPerS,
        `${cell(stats.ackMs.p50)} / ${cell(stats.ackMs.p99)}`,
        `${pct(throughputRatio)} / ${p99Ratio === null ? '–' : `${p99Ratio}×`}`,
      ];
      const alone = step.ingressAlone;
      return [
        offered,
        step.ceiling.acceptedPerS,
        `${cell(step.ceiling.ackMs.p50)} / ${cell(step.ceiling.ackMs.p99)}`,
        ...figures(step.app, step.throughputRatio, step.p99Ratio),
        ...(alone ? figures(alone.stats, alone.throughputRatio, alone.p99Ratio) : [null, null, null]),
        `${failures(step.app)} / ${alone ? failures(alone.stats) : '–'}`,
      ];
    }),
  );
}

/** The section of BENCHMARKS.md for one run. */
export function renderMarkdown(report: BenchReport): string {
  const { machine, versions, configuration } = report;
  const lines: string[] = [];
  const section = (heading: string, ...body: string[]) => lines.push(`### ${heading}`, '', ...body.flatMap((part) => [part, '']));
  lines.push(`## Run of ${report.startedAt}`, '');
  lines.push(
    `- Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGB} GB RAM, ${machine.os}; versions: ${Object.entries(versions)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}`,
  );
  lines.push(
    `- Configuration: ${Object.entries(configuration)
      .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
      .join(', ')}`,
    '',
  );

  section(
    'Targets',
    table(
      ['figure', 'target', 'measured', 'met', 'what bounds it'],
      report.targets.map((t) => [t.name, t.target, t.measured, met(t), t.bound ?? '']),
    ),
  );

  section('Ingest against the ceiling', ingestSection(report));

  section('The webhook routes', routesSection(report));
  section('Tracing', tracingSection(report));
  section('Media store: the directory against S3', mediaStoreSection(report.mediaStore));
  section('Outbound delivery', deliverySection(report.delivery));
  section('The knee', kneeSection(report.knee));

  section(
    'The whole app, phase by phase',
    table(
      [
        'phase',
        'children/s',
        'albums: total known / none',
        'decided p50 / p99, total known',
        'decided p99, no total',
        'media settled p99: total known / none',
        'signals per child',
        'CPU ms per child (ingress / worker / Temporal / PostgreSQL)',
        'PostgreSQL per child: commits / rows written / WAL KB',
        'machine busy / others (cores)',
      ],
      report.temporalCost.map((cost) => {
        const e = report.endToEnd.find((figures) => figures.phase === cost.phase);
        const cpu = report.cpu.find((p) => p.phase === `${cost.phase}, app`);
        const per = cpu ? cpuMsPerChildByProcess(cpu, cost.children) : null;
        const marked = cost.phase === report.sustainedPhase || cost.phase === report.burstPhase;
        return [
          marked ? `**${cost.phase}**` : cost.phase,
          e?.childrenPerS,
          ...decided(e),
          cost.signalFailures > 0 ? `${cell(cost.signalsPerChild)} (${cost.signalFailures} failed)` : cost.signalsPerChild,
          per && cpu
            ? `${appCpuMsPerChild(cpu, cost.children)} (${per.ingress} / ${per.worker} / ${per.temporal} / ${per.postgres})`
            : null,
          postgresCell(postgresPerChild(cpu?.postgres, cost.children)),
          cpu ? `${cpu.machineBusyCores} / ${cpu.otherCores}` : null,
        ];
      }),
    ),
  );

  const countColumns = [
    ['workflowTasks', 'workflow tasks'],
    ['historyEvents', 'history events'],
    ['signals', 'signals'],
    ['timersStarted', 'timers started'],
    ['activities', 'activities'],
    ['localActivities', 'local activities'],
    ['searchAttributeUpserts', 'search-attribute upserts'],
    ['billableActions', 'billable actions'],
  ] as const;
  section(
    "Temporal counts per album and per photo, from the workflows' histories",
    table(
      ['phase', 'albums / photos', ...countColumns.map(([, label]) => `${label} per album / photo`)],
      report.temporalCounts.map((c) => [
        c.phase,
        `${c.albums} / ${c.photos}`,
        ...countColumns.map(([key]) => `${cell(c.perAlbum[key])} / ${cell(c.perPhoto[key])}`),
      ]),
    ),
  );

  section(
    'Resident memory with the albums open in their late window',
    `${report.scale.openAlbums} albums open in PostgreSQL; ${cell(report.scale.runningWorkflows)} running workflows in Temporal; ` +
      `${cell(report.scale.workerCachedWorkflows)} in the worker's sticky cache.`,
    table(
      ['MB', ...Object.keys(report.scale.processes)],
      (
        [
          ['peak sampled RSS', 'peakRssMB'],
          ['VmHWM (start-up included)', 'hwmMB'],
          ['RSS at the end', 'rssAtTargetMB'],
        ] as const
      ).map(([label, key]) => [label, ...Object.values(report.scale.processes).map((m) => m[key])]),
    ),
  );

  const c = report.correctness;
  const logs = Object.entries(report.appLogs);
  section(
    'Correctness',
    `${c.acceptedChildren} accepted children, ${c.missingFromDecisions} missing from every decision; ${c.albums} albums, ` +
      `${c.duplicateAlbumReady} with a duplicate album.ready, ${c.albumsWithoutReady} without one. Decisions: ` +
      `${Object.entries(c.decisionsByTrigger)
        .map(([trigger, n]) => `${trigger} ${n}`)
        .join(', ')}.` +
      (c.ingressAlone
        ? ` The ingress alone acknowledged ${c.ingressAlone.acceptedChildren} children; ${c.ingressAlone.notStored} of them are not in its database.`
        : '') +
      (c.media
        ? ` ${c.media.attachments} attachments with a URL, not downloaded: ${
            Object.entries(c.media.notDownloaded)
              .map(([status, n]) => `${n} ${status}`)
              .join(', ') || 'none'
          }.`
        : '') +
      (logs.length > 0 ? ` App warnings/errors logged: ${logs.map(([message, n]) => `${n}× "${message}"`).join('; ')}.` : ''),
  );
  return `${lines.join('\n').trimEnd()}\n`;
}

export const benchmarksHeader = `# Benchmarks

The latest run of \`npm run bench\`; how it measures and what each figure means: [docs/performance.md](docs/performance.md).
`;

/**
 * BENCHMARKS.md with `run` as its run section, at the end: every other section (the hand-written part) kept
 * as it is, every earlier "## Run of …" section dropped (git history and bench/results/
 * keep them). `current` null: the file does not exist yet, and starts with the header.
 */
export function withRunSection(current: string | null, run: string): string {
  const kept = (current ?? benchmarksHeader)
    .split(/^(?=## )/m)
    .filter((section) => !section.startsWith('## Run of '))
    .join('');
  return `${kept.trimEnd()}\n\n${run}`;
}
