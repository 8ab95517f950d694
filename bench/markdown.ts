// The markdown of a bench run's section of BENCHMARKS.md, the file's header (the method) when it does not
// exist yet, and the file with the run's section in place of the previous run's. Pure (no I/O).
import { appCpuMsPerChild, pct, type BenchReport, type Percentiles, type StepStats } from './report.js';

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

/** The section of BENCHMARKS.md for one run. */
export function renderMarkdown(report: BenchReport): string {
  const { machine, versions, configuration } = report;
  const lines: string[] = [];
  lines.push(`## Run of ${report.startedAt}`);
  lines.push('');
  lines.push(`- Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGB} GB RAM, ${machine.os}`);
  lines.push(
    `- Versions: ${Object.entries(versions)
      .map(([name, version]) => `${name} ${version}`)
      .join(', ')}`,
  );
  lines.push(
    `- Configuration: ${Object.entries(configuration)
      .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
      .join(', ')}`,
  );
  lines.push('');
  lines.push('### Targets');
  lines.push('');
  lines.push(
    table(
      ['figure', 'target', 'measured', 'met'],
      report.targets.map((t) => [t.name, t.target, t.measured, t.met === null ? 'n/a' : t.met ? 'yes' : '**no**']),
    ),
  );
  lines.push('');
  lines.push('### 1–2. Ingest against the ceiling (same load, same run)');
  lines.push('');
  lines.push(
    table(
      ['offered', 'ceiling req/s', 'ceiling p50 / p99 ms', 'app req/s', 'app p50 / p99 ms', 'req/s ratio', 'p99 ratio', 'failures (app)'],
      report.ingest.flatMap((step) => {
        const offered = step.rate === null ? `closed loop, ${step.concurrency} in flight` : `${step.rate} req/s`;
        const row = (label: string, app: StepStats, throughputRatio: number | null, p99Ratio: number | null): Cell[] => [
          label,
          step.ceiling.acceptedPerS,
          `${cell(step.ceiling.ackMs.p50)} / ${cell(step.ceiling.ackMs.p99)}`,
          app.acceptedPerS,
          `${cell(app.ackMs.p50)} / ${cell(app.ackMs.p99)}`,
          pct(throughputRatio),
          p99Ratio === null ? '–' : `${p99Ratio}×`,
          failures(app),
        ];
        const alone = step.ingressAlone;
        return [
          row(offered, step.app, step.throughputRatio, step.p99Ratio),
          ...(alone ? [row(`${offered}, the ingress alone`, alone.stats, alone.throughputRatio, alone.p99Ratio)] : []),
        ];
      }),
    ),
  );
  lines.push('');
  lines.push('### 2b. The Telegram route beside the UnifyPort route (the whole app, same albums, same offered rate)');
  lines.push('');
  const { telegram } = report;
  const routeRow = (route: string, rate: number, stats: StepStats): Cell[] => [
    route,
    `${rate} req/s`,
    stats.acceptedPerS,
    `${cell(stats.ackMs.p50)} / ${cell(stats.ackMs.p90)} / ${cell(stats.ackMs.p99)} / ${cell(stats.ackMs.max)}`,
    failures(stats),
  ];
  lines.push(
    telegram
      ? table(
          ['route', 'offered', 'acknowledged req/s', 'ack p50 / p90 / p99 / max ms', 'failures'],
          [
            routeRow('UnifyPort (202 with a body)', telegram.rate, telegram.unifyport),
            routeRow('Telegram (200, empty body)', telegram.rate, telegram.telegram),
          ],
        )
      : 'Not measured (the telegram phase did not run).',
  );
  lines.push('');
  lines.push("### 3. End to end: last child's 202 → recorded decision, and → its media settled");
  lines.push('');
  const spread = (p: Percentiles | null) => (p === null ? '–' : `${cell(p.p50)} / ${cell(p.p99)} / ${cell(p.max)}`);
  lines.push(
    table(
      [
        'phase',
        'children/s',
        'total known: albums',
        'decided p50 / p99 / max ms',
        'media settled p50 / p99 / max ms',
        'no total: albums',
        'decided p50 / p99 / max ms (minus quiet period)',
        'media settled p50 / p99 / max ms (minus quiet period)',
        'decided otherwise',
        'downloaded / attachments (MB)',
      ],
      report.endToEnd.map((e) => [
        e.phase === report.sustainedPhase ? `**${e.phase}**` : e.phase,
        e.childrenPerS,
        e.withTotal.albums,
        spread(e.withTotal.ms),
        spread(e.withTotal.mediaSettledMs),
        e.withoutTotal.albums,
        spread(e.withoutTotal.ms),
        spread(e.withoutTotal.mediaSettledMs),
        e.withTotal.decidedOtherwise + e.withoutTotal.decidedOtherwise,
        e.media ? `${e.media.downloaded} / ${e.media.attachments} (${e.media.megabytes})` : 'no URLs',
      ]),
    ),
  );
  lines.push('');
  lines.push('### 3b. The knee: completion p99 (total known) at rising sustained rates, with downloads');
  lines.push('');
  lines.push(
    report.knee.steps.length === 0
      ? 'Not measured.'
      : `The highest rate that held: ${report.knee.highestMet === null ? 'none' : `${report.knee.highestMet} children/s`}.\n\n` +
          table(
            ['offered/s', 'children/s', 'albums with a total', 'p99 ms', 'app CPU ms per new child', 'held'],
            report.knee.steps.map((step) => [
              step.rate,
              step.childrenPerS,
              step.albums,
              step.p99Ms,
              step.cpuMsPerChild,
              step.met ? 'yes' : '**no**',
            ]),
          ),
  );
  lines.push('');
  lines.push('### 4. Temporal cost (dispatcher counters)');
  lines.push('');
  lines.push(
    table(
      ['phase', 'new children', 'signalWithStart', 'per child', 'children per signal', 'failed signals'],
      report.temporalCost.map((c) => [
        c.phase === report.burstPhase ? `**${c.phase}**` : c.phase,
        c.children,
        c.signalWithStarts,
        c.signalsPerChild,
        c.childrenPerSignal,
        c.signalFailures,
      ]),
    ),
  );
  lines.push('');
  lines.push('### 5. Scale: resident memory with the albums open in their late window');
  lines.push('');
  lines.push(
    `${report.scale.openAlbums} albums open in PostgreSQL; ${cell(report.scale.runningWorkflows)} running workflows in Temporal; ` +
      `${cell(report.scale.workerCachedWorkflows)} in the worker's sticky cache.`,
  );
  lines.push('');
  lines.push(
    table(
      ['process', 'peak sampled RSS MB', 'VmHWM MB (start-up included)', 'RSS MB at the end'],
      Object.entries(report.scale.processes).map(([name, m]) => [name, m.peakRssMB, m.hwmMB, m.rssAtTargetMB]),
    ),
  );
  lines.push('');
  lines.push('### 6. Correctness');
  lines.push('');
  const c = report.correctness;
  lines.push(
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
        : ''),
  );
  lines.push('');
  lines.push("### 7. Temporal counts per album and per photo, from the workflows' histories");
  lines.push('');
  lines.push(
    'Billable actions as Temporal Cloud counts them (docs.temporal.io/cloud/actions, the April 2026 version): heartbeats ' +
      'and queries are not in a history and not counted. A photo is a new child (one attachment each).',
  );
  lines.push('');
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
  lines.push(
    table(
      ['phase', 'albums / photos', 'per', ...countColumns.map(([, label]) => label)],
      report.temporalCounts.flatMap((c) => [
        [c.phase, `${c.albums} / ${c.photos}`, 'album', ...countColumns.map(([key]) => c.perAlbum[key])],
        ['', '', 'photo', ...countColumns.map(([key]) => c.perPhoto[key])],
      ]),
    ),
  );
  lines.push('');
  lines.push('### CPU seconds per phase (postgres: every PostgreSQL process of the machine)');
  lines.push('');
  const names = [...new Set(report.cpu.flatMap((p) => Object.keys(p.cpuS)))];
  lines.push(
    table(
      ['phase', 'wall s', ...names, 'machine busy (cores)', 'of which others (cores)', 'app CPU ms per new child'],
      report.cpu.map((p) => {
        const cost = report.temporalCost.find((c) => `${c.phase}, app` === p.phase);
        return [
          p.phase,
          p.wallS,
          ...names.map((n) => p.cpuS[n]),
          p.machineBusyCores,
          p.otherCores,
          cost ? appCpuMsPerChild(p, cost.children) : null,
        ];
      }),
    ),
  );
  const logs = Object.entries(report.appLogs);
  if (logs.length > 0) {
    lines.push('');
    lines.push(`App warnings/errors logged: ${logs.map(([message, n]) => `${n}× "${message}"`).join('; ')}.`);
  }
  lines.push('');
  return lines.join('\n');
}

export const benchmarksHeader = `# Benchmarks

\`npm run bench\` (bench/run.ts) measures albumflow on the machine it runs on, with everything
co-located: fresh databases (on \`DATABASE_URL\`, else on an embedded PostgreSQL of the run), an embedded
Temporal dev server (or the server of \`TEMPORAL_ADDRESS\`), the ingress and the worker as
separate processes (\`src/ingress.ts\`, \`src/worker.ts\`), the ceiling server (bench/ceiling.ts), the
media server (bench/media/server.ts) and the load generator (bench/load.ts), each its own process.
Each run replaces the run section at the end of this file with its own, and keeps its JSON under
bench/results/ (not committed). This file holds the method, where the figures stand, and the latest full
run; earlier runs are in git history.

Method:
- **Ceiling.** A bare Fastify endpoint verifies the same HMAC and commits the same rows (event, album,
  child, attachments, outbox row) in one transaction with the app's own ingest statement, and does
  nothing else (no NOTIFY either: it has no dispatcher to wake, and its database has no outbox trigger),
  one transaction per request; its connections stay open between steps. It is measured in the same
  run, under the same load (the same seeded request sequence, in its own database), just before the
  ingress alone and the app, while the worker and the Temporal server are idle.
- **The ingress alone.** Every ingest step runs a third time, right after the ceiling's, against the
  app's ingress without its dispatcher (bench/ingress-alone.ts, in a database of its own): the same HTTP
  server, schemas and batched commits as the app, doing the ceiling's work (verify, parse, commit) with
  the pipeline idle as it is for the ceiling. Group commit is held to the ceiling with it; every child it
  acknowledged is checked to be in its database. The whole app's steps, with the worker and the Temporal
  server working through the children on the same cores, are reported beside it and held to the other
  ingest targets.
- **Load.** Signed \`message.received\` webhooks for albums of 1–10 children (about half carry
  \`album.total\`), the children of a few albums interleaved in shuffled order, 5% redelivered. Open
  loop at each offered rate (bounded concurrency; latency counts from the intended send time, so a
  server that falls behind is not flattered by coordinated omission), then a closed loop that sends
  as fast as the server answers. The load generator shares the two cores with everything else.
- **Ack latency** is the load generator's send → 202 answer. **Req/s** counts 202 answers over the
  step's wall time.
- **Telegram route.** The first offered rate runs twice more against the whole app, the same seeded
  albums each time: as UnifyPort events, then as a bot's Telegram Updates to
  \`POST /webhooks/telegram/<workspace>/<bot>\` (secret token, no signature; answered 200 with an
  empty body). Their files are documents over the cloud Bot API's 20 MB limit, so they are
  \`unavailable\` at once and no download leaves the machine; a 10-item album is decided \`album_full\`.
- **Media.** Every child of the sustained and burst phases has one attachment with a URL on the bench's
  media server (bench/media/server.ts, its own process): real JPEG, PNG and WebP images and MP4-like
  files of 120 KB–3 MB, about 0.5 MB on average, made with sharp from seeded pixels when it starts (none
  committed), each response after a time to first byte of 30–90 ms and at 25 MB/s by default
  (\`--media-first-byte-ms\`, \`--media-mb-per-s\`). The worker downloads
  each one (MEDIA_ALLOW_PRIVATE_NETWORKS=true, as the server is on the loopback). \`--no-media\` sends the
  attachments without URLs. The ingest steps and the scale top-up carry no URLs.
- **End to end** is, per complete album, the last new child's 202 (at the load generator) → the
  \`recorded_at\` of its first decision in PostgreSQL; for albums without a total the quiet period
  is subtracted. **Media settled** is the same album's last 202 → the \`created_at\` of the
  \`album.media_settled\` notification of that decision (stored once every attachment of its children
  is downloaded or given up). A phase with media ends when every album notified its media settled.
- **Temporal cost** is \`albumflow_signals_sent_total\` (each is one signalWithStart) over the new
  children of the phase, from the ingress's /metrics.
- **Temporal counts** come from the histories of every run of each album workflow of the sustained and
  burst phases, fetched with the Temporal client once the phase settled (the albums are still open in
  their late window): workflow tasks, history events, signals, timers started, activities, local
  activities (their marker events), search-attribute upserts, and billable actions as Temporal Cloud
  counts them (docs.temporal.io/cloud/actions, April 2026: a signal-with-start that starts the workflow
  is one action, the markers of one workflow task one, TemporalChangeVersion upserts none; heartbeats
  and queries are not in a history and not counted), divided by the phase's albums and photos.
- **The cost baseline** sends the sustained phase's stream (the same shapes, other ids) to a second
  ingress and worker started for it with TEMPORAL_COST_BASELINE=true (their own database and task queue,
  the same Temporal server): one signal per child and one download activity per attachment, the design
  albumflow is judged against. Only its Temporal counts are reported, beside the default's.
- **The knee** is a series of sustained steps with downloads, from 100 children/s up by 25 (10 s each,
  each settled before the next), until the completion p99 (total known) misses 250 ms; the highest
  rate that held is reported, and the first step's app CPU ms per new child is the CPU target's figure.
- **Scale** is VmRSS sampled every 250 ms and VmHWM (peak since start, start-up included) from
  /proc, with every album of the run open in its late window (LATE_WINDOW_MS is long).
- **Correctness** is checked on every run: each accepted child appears in a recorded decision, no
  album has two \`album.ready\` notifications, and every attachment with a URL was downloaded.
- **CPU seconds per phase** come from /proc for each process the bench started, PostgreSQL (all of
  the machine's) and the whole machine; "others" is what processes the bench did not start took. On a
  shared machine that column says how far a run's figures can be trusted.
`;

/**
 * BENCHMARKS.md with `run` as its run section, at the end: every other section (the method, where the
 * figures stand) kept as it is, every earlier "## Run of …" section dropped (git history and bench/results/
 * keep them). `current` null: the file does not exist yet, and starts with the header.
 */
export function withRunSection(current: string | null, run: string): string {
  const kept = (current ?? benchmarksHeader)
    .split(/^(?=## )/m)
    .filter((section) => !section.startsWith('## Run of '))
    .join('');
  return `${kept.trimEnd()}\n\n${run}`;
}
