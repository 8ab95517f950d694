// What a bench run reports: the figures of each section and the targets they are held to
// (bench/markdown.ts writes them for BENCHMARKS.md). Pure (no I/O).
import type { PhaseCounts } from './temporal-counts.js';
import type { RequestRecord } from '../test/harness/load.js';

export interface Percentiles {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}

/** Nearest-rank percentiles. */
export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => (sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
  return { count: sorted.length, p50: rank(50), p90: rank(90), p99: rank(99), max: sorted.length ? sorted[sorted.length - 1]! : null };
}

export interface StepStats {
  /** Requests the load generator sent. */
  sent: number;
  /** Acknowledgements (new children and redeliveries): 202 from the UnifyPort route, 200 from the Telegram and LINE routes. */
  accepted: number;
  duplicates: number;
  /** Other answers and requests without an answer, by status ("0" = no answer). */
  failures: Record<string, number>;
  /** From the first intended send to the last answer. */
  durationS: number;
  acceptedPerS: number;
  /** From the intended send (so queueing in the load generator counts) to the answer, ms. */
  ackMs: Percentiles;
  truncated: boolean;
}

export function stepStats(records: readonly RequestRecord[], truncated: boolean): StepStats {
  const accepted = records.filter((r) => r.accepted);
  const failures: Record<string, number> = {};
  for (const r of records) if (!r.accepted) failures[String(r.status)] = (failures[String(r.status)] ?? 0) + 1;
  const first = Math.min(...records.map((r) => r.intendedAt));
  const last = Math.max(...records.map((r) => r.ackAt));
  const durationS = records.length > 0 ? (last - first) / 1000 : 0;
  return {
    sent: records.length,
    accepted: accepted.length,
    duplicates: accepted.filter((r) => r.duplicate === true).length,
    failures,
    durationS: round(durationS, 2),
    acceptedPerS: durationS > 0 ? round(accepted.length / durationS, 1) : 0,
    ackMs: roundPercentiles(percentiles(accepted.map((r) => r.ackAt - r.intendedAt))),
    truncated,
  };
}

export interface IngestStep {
  /** Offered rate, requests/s; null for the closed loop (as fast as answered). */
  rate: number | null;
  concurrency: number;
  ceiling: StepStats;
  app: StepStats;
  /** app accepted/s ÷ ceiling accepted/s. */
  throughputRatio: number | null;
  /** app p99 ack ÷ ceiling p99 ack. */
  p99Ratio: number | null;
  /**
   * The app's ingress without its dispatcher (bench/ingress-alone.ts, a database of its own), run right
   * after the ceiling, so both do the same work with no pipeline on the cores.
   */
  ingressAlone?: { stats: StepStats; throughputRatio: number | null; p99Ratio: number | null };
}

export type RouteName = 'unifyport' | 'telegram' | 'line';

export const routeLabels: Record<RouteName, string> = { unifyport: 'UnifyPort', telegram: 'Telegram', line: 'LINE' };

/** One route of the routes step: the whole app under the step's albums sent to that route. */
export interface RouteStep {
  route: RouteName;
  /** Its phase's name in the CPU and Temporal figures. */
  phase: string;
  stats: StepStats;
  /** The ingress's CPU over the step per request it was sent (verify, parse, commit, answer; and its dispatcher). */
  ingressCpuMsPerRequest: number | null;
}

/** The three webhook routes under the same albums at the same offered rate, one after the other. */
export interface RoutesStep {
  /** Offered rate, requests/s. */
  rate: number;
  concurrency: number;
  routes: RouteStep[];
}

/** An app of the tracing step: OpenTelemetry off, on with every trace sampled out, or on at 100% sampling. */
export type TracingVariant = 'off' | 'sampled out' | '100%';

/** One app's turn in the tracing step. */
export interface TracingRun {
  variant: TracingVariant;
  round: number;
  stats: StepStats;
  children: number;
  /** Its ingress's CPU per request it was sent. */
  ingressCpuMsPerRequest: number | null;
  /** Its ingress, its worker, the Temporal server and PostgreSQL, per new child. */
  appCpuMsPerChild: number | null;
}

/** The same ingest load against three apps alike but for tracing, in alternating rounds. */
export interface TracingStep {
  rate: number;
  concurrency: number;
  runs: TracingRun[];
  /** Spans the run's OTLP receiver got from each app (by its service name), all its turns together. */
  spans: Record<TracingVariant, number>;
  /** The 100% app's spans per new child of its turns. */
  spansPerChild: number | null;
  /** Export requests the receiver refused (none expected). */
  spansRefused: number;
}

export interface TracingFigures {
  ingressCpuMsPerRequest: number | null;
  appCpuMsPerChild: number | null;
  ackP99Ms: number | null;
}

export interface TracingSummary {
  /** Each app's mean over its rounds. */
  means: Record<TracingVariant, TracingFigures>;
  /** The noise: the largest difference between two rounds of the same app (off or sampled out), per figure. */
  noise: TracingFigures;
}

const tracingFigures = (run: TracingRun): TracingFigures => ({
  ingressCpuMsPerRequest: run.ingressCpuMsPerRequest,
  appCpuMsPerChild: run.appCpuMsPerChild,
  ackP99Ms: run.stats.ackMs.p99,
});

/** Means per app and the noise between rounds of one app. */
export function tracingSummary(step: TracingStep): TracingSummary {
  const keys = ['ingressCpuMsPerRequest', 'appCpuMsPerChild', 'ackP99Ms'] as const;
  const of = (variant: TracingVariant) => step.runs.filter((run) => run.variant === variant).map(tracingFigures);
  const mean = (figures: TracingFigures[]): TracingFigures => {
    const result = {} as TracingFigures;
    for (const key of keys) {
      const values = figures.map((f) => f[key]).filter((v): v is number => v !== null);
      result[key] = values.length > 0 ? round(values.reduce((a, b) => a + b, 0) / values.length, 2) : null;
    }
    return result;
  };
  const spread = (figures: TracingFigures[], key: (typeof keys)[number]) => {
    const values = figures.map((f) => f[key]).filter((v): v is number => v !== null);
    return values.length > 1 ? Math.max(...values) - Math.min(...values) : null;
  };
  const noise = {} as TracingFigures;
  for (const key of keys) {
    const spreads = [spread(of('off'), key), spread(of('sampled out'), key)].filter((v): v is number => v !== null);
    noise[key] = spreads.length > 0 ? round(Math.max(...spreads), 2) : null;
  }
  return { means: { off: mean(of('off')), 'sampled out': mean(of('sampled out')), '100%': mean(of('100%')) }, noise };
}

export interface EndToEnd {
  phase: string;
  /** New children accepted per second over the phase (redeliveries not counted). */
  childrenPerS: number;
  withTotal: {
    albums: number;
    /** Complete albums whose first decision was not `expected_count_reached`. */
    decidedOtherwise: number;
    /** Last child's 202 → recorded `expected_count_reached` decision, ms. */
    ms: Percentiles;
    /** Last child's 202 → the `album.media_settled` of that decision stored, ms; null when the phase had no media. */
    mediaSettledMs: Percentiles | null;
  };
  withoutTotal: {
    albums: number;
    decidedOtherwise: number;
    /** Last child's 202 → recorded `quiet_period` decision, minus QUIET_PERIOD_MS, ms. */
    ms: Percentiles;
    /** As for albums with a total, minus QUIET_PERIOD_MS; null when the phase had no media. */
    mediaSettledMs: Percentiles | null;
  };
  /** The phase's attachments with a URL, how many were downloaded and their MB (10^6 bytes); null without media. */
  media: { attachments: number; downloaded: number; megabytes: number } | null;
}

export interface TemporalCost {
  phase: string;
  /** New children accepted in the phase. */
  children: number;
  signalWithStarts: number;
  signalsPerChild: number | null;
  childrenPerSignal: number | null;
  signalFailures: number;
}

export interface ProcessMemory {
  /** Peak sampled VmRSS while the albums were open, MB (10^6 bytes). */
  peakRssMB: number | null;
  /** VmHWM at the end of the run: the peak since the process started, start-up included, MB. */
  hwmMB: number | null;
  /** VmRSS once the albums were open and every child decided, MB. */
  rssAtTargetMB: number | null;
}

export interface Scale {
  /** Albums in PostgreSQL not closed, at the measurement. */
  openAlbums: number;
  /** Running album workflows on the run's task queue (Temporal visibility); null when it could not be counted. */
  runningWorkflows: number | null;
  processes: Record<string, ProcessMemory>;
  /** The worker's sticky cache (Temporal's temporal_sticky_cache_size) at the measurement. */
  workerCachedWorkflows: number | null;
}

export interface Correctness {
  acceptedChildren: number;
  /** Accepted children that no recorded decision includes. */
  missingFromDecisions: number;
  missingExamples: string[];
  albums: number;
  /** Albums with more than one `album.ready` notification. */
  duplicateAlbumReady: number;
  albumsWithoutReady: number;
  decisionsByTrigger: Record<string, number>;
  /** The ingress alone, over every ingest step: children it acknowledged, and how many of them its database lacks. */
  ingressAlone: { acceptedChildren: number; notStored: number } | null;
  /** The attachments with a URL of the phases with media, and those not downloaded by status; null without media. */
  media: { attachments: number; notDownloaded: Record<string, number> } | null;
  ok: boolean;
}

export interface PhaseCpu {
  phase: string;
  wallS: number;
  /** CPU seconds per process (postgres: every PostgreSQL process of the machine). */
  cpuS: Record<string, number>;
  /** Whole-machine busy share over the phase, 0–1 per core summed (2 = both cores busy). */
  machineBusyCores: number;
  /** Cores busy with processes the bench did not start (other work on a shared machine), on average. */
  otherCores: number;
  /** What PostgreSQL did over the phase (absent from reports written before it was measured). */
  postgres?: PostgresActivity;
}

export interface RowsWritten {
  inserted: number;
  updated: number;
  deleted: number;
}

/**
 * What PostgreSQL did over a phase: transactions committed and rows written in the run's databases
 * (pg_stat_database, the bench's own queries included), and the WAL the whole server wrote.
 */
export interface PostgresActivity {
  commits: number;
  rowsWritten: RowsWritten;
  walBytes: number;
  /** Each database of the run that committed in the phase, by its name less the run's prefix ("app" for the app's). */
  databases: Record<string, { commits: number; rowsWritten: RowsWritten }>;
}

/** PostgreSQL's work per new child over a phase: commits, rows written (inserted + updated + deleted) and WAL KB (1024 bytes). */
export interface PostgresPerChild {
  commits: number;
  rowsWritten: number;
  walKB: number;
}

export function postgresPerChild(activity: PostgresActivity | undefined, children: number): PostgresPerChild | null {
  if (!activity || children <= 0) return null;
  const { inserted, updated, deleted } = activity.rowsWritten;
  return {
    commits: round(activity.commits / children, 2),
    rowsWritten: round((inserted + updated + deleted) / children, 2),
    walKB: round(activity.walBytes / 1024 / children, 2),
  };
}

/** One step of a knee search: a sustained load at an offered rate. */
export interface KneeStep {
  /** Offered children/s (5% of the requests are redeliveries). */
  rate: number;
  /** New children accepted per second. */
  childrenPerS: number;
  albums: number;
  /** Completion p99 of the albums with a total, ms. */
  p99Ms: number | null;
  /** CPU ms per new child of the ingress, the worker, the Temporal server and PostgreSQL. */
  cpuMsPerChild: number | null;
  /** Cores busy with processes the bench did not start, on average over the step. */
  otherCores: number | null;
  /** PostgreSQL's work per new child over the step (absent from reports written before it was measured). */
  postgresPerChild?: PostgresPerChild | null;
  met: boolean;
}

/**
 * Which Temporal server a knee search ran on: the stack's (the dev server of the run, or TEMPORAL_ADDRESS's),
 * or the real server (tools/cluster/, on the run's PostgreSQL) the knee phase starts.
 */
export type KneeServer = 'dev' | 'real';

/** One knee search: on one Temporal server, with or without downloads. */
export interface Knee {
  server: KneeServer;
  /** The server for a reader ("the Temporal dev server", "Temporal server 1.32.1 on PostgreSQL"). */
  serverName: string;
  /** Every child's attachment had a URL on the media server, so the worker downloaded it. */
  media: boolean;
  /** The completion p99 (total known) a step must stay within: QUIET_PERIOD_MS + 500 ms. */
  targetMs: number;
  steps: KneeStep[];
  /** The highest children/s of a step that met the completion target; null when none did. */
  highestMet: number | null;
  /** Why the search did not run (no binaries of the real server, --no-media); null when it did. */
  notMeasured: string | null;
}

/** The knee phase's searches, in the order it runs them. */
export const kneeSearches: ReadonlyArray<{ server: KneeServer; media: boolean }> = [
  { server: 'dev', media: true },
  { server: 'dev', media: false },
  { server: 'real', media: true },
  { server: 'real', media: false },
];

/** A knee search for a reader: "dev server, with media". */
export function kneeLabel(search: { server: KneeServer; media: boolean }): string {
  return `${search.server === 'dev' ? 'dev server' : 'real server'}, ${search.media ? 'with media' : 'no media'}`;
}

/** The CPU ms per new child of the app's processes (the ingress, the worker, the Temporal server, PostgreSQL) over one phase. */
export function appCpuMsPerChild(cpu: PhaseCpu, children: number): number | null {
  const appCpu = ['ingress', 'worker', 'temporal', 'postgres'].reduce((sum, name) => sum + (cpu.cpuS[name] ?? 0), 0);
  return children > 0 ? round((appCpu * 1000) / children, 1) : null;
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  met: boolean | null;
  /** For a missed target, what bounds the figure, in a sentence; null otherwise. */
  bound: string | null;
}

export type MediaStoreKind = 'directory' | 's3';

/** One round of the media store phase against one store's app. */
export interface MediaStoreRound {
  round: number;
  /** Its albums had the 50 MB videos among their photos (round 1 has photos only). */
  videos: boolean;
  /** New children the load sent (one photo each). */
  children: number;
  workerCpuS: number;
  workerCpuMsPerChild: number | null;
}

/** What the store holds after the phase, against what the app's rows say it downloaded. */
export interface MediaStoreCheck {
  /** Attachments with a URL (one per new child). */
  photos: number;
  /** Of them, those `downloaded` (the rest by status in `notDownloaded`). */
  downloaded: number;
  notDownloaded: Record<string, number>;
  /** Downloaded photos of the 50 MB video. */
  largeFiles: number;
  megabytes: number;
  /** Objects of the store under sha256/ (each photo's bytes are its own, so one per photo). */
  objects: number;
  /** Downloaded photos whose object is not in the store, or not at its size. */
  missing: number;
  /** Objects no photo names (listed more than once, or of nothing downloaded). */
  extra: number;
  /** Objects in the worker's MEDIA_DIR though the store is S3 (null for the directory store). */
  localObjects: number | null;
  ok: boolean;
}

/**
 * The worker's downloads against their floor: the photos-only round's albums again without media (no URL,
 * so no download), and the bare loop (bench/download-floor.ts) over the round's files into a store of the
 * same kind.
 */
export interface DownloadFloor {
  /** The worker's CPU per new child of the same albums without media, ms. */
  noMediaCpuMsPerChild: number | null;
  /** The worker's CPU per downloaded photo: its CPU per child with the photos less without them, ms. */
  workerCpuMsPerDownload: number | null;
  /** Files the floor fetched and stored. */
  floorFiles: number;
  /** The floor's CPU per file, ms. */
  floorCpuMsPerFile: number | null;
  /** workerCpuMsPerDownload / floorCpuMsPerFile. */
  ratio: number | null;
}

export interface MediaStoreVariant {
  store: MediaStoreKind;
  /** MEDIA_DIR, or MEDIA_STORE's s3:// location. */
  location: string;
  rounds: MediaStoreRound[];
  /** Over its rounds with the videos. */
  workerCpuMsPerChild: number | null;
  /** The S3 server's CPU per child meanwhile (null for the directory store). */
  storeServerCpuMsPerChild: number | null;
  /** The worker's RSS when the phase began (started, idle), MB. */
  idleRssMB: number | null;
  /** Its peak RSS over the photos-only round, MB: VmHWM reset at the round's start, else the sampled peak. */
  photosPeakRssMB: number | null;
  /** Its peak RSS over the rounds with the videos, MB (VmHWM reset again, else sampled). */
  peakRssMB: number | null;
  peakRssFrom: 'VmHWM' | 'sampled';
  /** Its downloads of the photos-only round against the floor. */
  floor: DownloadFloor;
  check: MediaStoreCheck;
}

/** The media store phase: the same downloads to an app on the directory store and one on S3, in the same run. */
export interface MediaStoreStep {
  rate: number;
  seconds: number;
  /** The files the albums' photos are drawn from, with the phase's weights. */
  files: Array<{ name: string; bytes: number; weight: number }>;
  /** Why the phase was not measured (no S3 server, no media server); null when it was. */
  unavailable: string | null;
  variants: MediaStoreVariant[];
  /** S3 / directory, over the rounds with the videos. */
  ratios: { workerCpuPerChild: number | null; workerPeakRss: number | null; cpuPerChildWithStoreServer: number | null };
  /** The largest difference between the two rounds with videos of one store's worker CPU per child, ms. */
  noiseCpuMsPerChild: number | null;
  ok: boolean;
}

/** A notification of the delivery phase: its webhook-id, its album, and its place among the album's notifications (from 0). */
export interface SentNotification {
  webhookId: string;
  album: string;
  index: number;
}

/** A request the receiver verified, in arrival order, and whether it was answered 2xx. */
export interface Arrival {
  webhookId: string;
  delivered: boolean;
}

/** What a receiver got of the notifications sent to it. */
export interface DeliveryCheck {
  notifications: number;
  /** Notifications whose webhook-id the receiver answered 2xx at least once. */
  arrived: number;
  /** Requests for a notification made before the one ahead of it in its album was answered 2xx. */
  outOfOrder: number;
  /** Requests the receiver could not verify with standardwebhooks. */
  unverified: number;
  ok: boolean;
}

/** Every notification arrived (at least once), none before the one ahead of it in its album was delivered. */
export function deliveryCheck(sent: readonly SentNotification[], arrivals: readonly Arrival[], unverified: number): DeliveryCheck {
  const byId = new Map(sent.map((n) => [n.webhookId, n]));
  const idAt = new Map(sent.map((n) => [`${n.index} ${n.album}`, n.webhookId]));
  const delivered = new Set<string>();
  let outOfOrder = 0;
  for (const arrival of arrivals) {
    const notification = byId.get(arrival.webhookId);
    if (!notification) continue;
    const ahead = notification.index > 0 ? idAt.get(`${notification.index - 1} ${notification.album}`) : undefined;
    if (ahead !== undefined && !delivered.has(ahead)) outOfOrder += 1;
    if (arrival.delivered) delivered.add(arrival.webhookId);
  }
  return {
    notifications: sent.length,
    arrived: delivered.size,
    outOfOrder,
    unverified,
    ok: delivered.size === sent.length && outOfOrder === 0 && unverified === 0,
  };
}

/** One sender of the delivery phase's throughput step, the delivery engine or the ceiling. */
export interface DeliverySender {
  /** Requests the receiver answered 2xx. */
  delivered: number;
  /** From the start (the endpoint turned on; the ceiling told to send) to the receiver's last request, s. */
  durationS: number;
  perS: number | null;
  /** The sender's process's CPU over the step per notification, ms. */
  cpuMsPerNotification: number | null;
}

/** Outbound delivery: its throughput against a bare signed POST loop, and the drain of a backlog after an outage. */
export interface DeliveryStep {
  /** Requests in flight at once (DELIVERY_CONCURRENCY; the ceiling's too). */
  concurrency: number;
  throughput: {
    notifications: number;
    albums: number;
    /** The endpoint's rate limit, requests/s: the highest an endpoint may have. */
    rateLimit: number;
    engine: DeliverySender & {
      /** Every PostgreSQL process of the machine over the step, per notification. */
      postgresCpuMsPerNotification: number | null;
    };
    ceiling: DeliverySender;
    /** engine notifications/s ÷ ceiling notifications/s. */
    throughputRatio: number | null;
    /** engine CPU per notification ÷ ceiling CPU per notification. */
    cpuRatio: number | null;
    check: DeliveryCheck;
  };
  drain: {
    notifications: number;
    albums: number;
    /** The endpoint's rate limit, requests/s. */
    rateLimit: number;
    outageS: number;
    /** DELIVERY_SCHEDULE of the engine. */
    schedule: string;
    /** Attempts answered 503 during the outage. */
    refused: number;
    /** Notifications still undelivered when the receiver recovered. */
    backlog: number;
    /** From the recovery to the first attempt answered 2xx (the wait for the schedule's next attempt), s. */
    firstDeliveryS: number | null;
    /** From the recovery until every delivery was delivered, s. */
    drainS: number | null;
    /** The drain rate: the backlog ÷ drainS, deliveries/s. */
    drainPerS: number | null;
    /** drainPerS ÷ rateLimit. */
    rateRatio: number | null;
    /** The pace of the attempts after the recovery: (attempts − 1) ÷ the time from the first's start to the last's (the engine's clock). */
    pacePerS: number | null;
    /** The pace at most the rate limit (the rate limit bounds attempts, the drain rate is at most the pace). */
    withinRateLimit: boolean;
    check: DeliveryCheck;
  };
  ok: boolean;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  machine: { cpuModel: string; cores: number; memoryGB: number; os: string };
  versions: Record<string, string>;
  configuration: Record<string, unknown>;
  ingest: IngestStep[];
  /** Null when the routes phase did not run. */
  routes: RoutesStep | null;
  /** Null when the tracing phase did not run. */
  tracing: TracingStep | null;
  /** Null when the media store phase did not run (absent from reports before it). */
  mediaStore?: MediaStoreStep | null;
  /** Null when the delivery phase did not run (absent from reports before it). */
  delivery?: DeliveryStep | null;
  endToEnd: EndToEnd[];
  /** The phase held to the end-to-end target. */
  sustainedPhase: string;
  temporalCost: TemporalCost[];
  /** Per album and per photo, from the histories of the end-to-end phases' workflows. */
  temporalCounts: PhaseCounts[];
  /** The phase held to the signals-per-child target. */
  burstPhase: string;
  /** The sustained load against the cost baseline's configuration (bench/baseline/). */
  baselinePhase: string;
  /** One per knee search (kneeSearches), measured or not. */
  knee: Knee[];
  scale: Scale;
  correctness: Correctness;
  cpu: PhaseCpu[];
  targets: Target[];
  /** Warnings and errors the app's processes logged, by message. */
  appLogs: Record<string, number>;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function roundPercentiles(p: Percentiles): Percentiles {
  const r = (v: number | null) => (v === null ? null : round(v, 1));
  return { count: p.count, p50: r(p.p50), p90: r(p.p90), p99: r(p.p99), max: r(p.max) };
}

export function ratio(numerator: number | null, denominator: number | null): number | null {
  if (numerator === null || denominator === null || denominator === 0) return null;
  return round(numerator / denominator, 2);
}

export function megabytes(bytes: number | null): number | null {
  return bytes === null ? null : round(bytes / 1e6, 1);
}

const targetLimits = {
  throughputRatio: 0.9,
  /** Group commit: the ingress alone's closed-loop req/s at least this multiple of the ceiling's, at a p99 no higher. */
  groupCommitRatio: 2,
  p99Ratio: 2,
  endToEndP99Ms: 250,
  sustainedChildrenPerS: 150,
  /** CPU ms per new child for the whole pipeline, at this rate. */
  cpuMsPerChild: 10,
  cpuRate: 100,
  signalsPerChild: 0.2,
  billableActionsPerPhoto: 1.5,
  rssMB: 400,
  /** The worker's CPU per downloaded photo at most this multiple of the download floor's per file. */
  downloadFloorRatio: 1.5,
};

/** A knee search's step at an offered rate is this phase (its CPU and Temporal cost figures are under this name). */
export function kneePhase(search: { server: KneeServer; media: boolean }, rate: number): string {
  return `knee ${rate}/s (${kneeLabel(search)})`;
}

/** The ingest step at an offered rate (null: the closed loop) is this phase. */
export function ingestPhase(rate: number | null): string {
  return rate === null ? 'ingest closed loop' : `ingest ${rate}/s`;
}

/** A duration for a reader: milliseconds under a second, seconds above. */
export function duration(ms: number | null): string {
  if (ms === null) return '–';
  return ms < 1000 ? `${round(ms, 1)} ms` : `${round(ms / 1000, 1)} s`;
}

/** The app's processes, as the CPU figures name them. */
export const appProcesses = [
  ['ingress', 'the ingress'],
  ['worker', 'the worker'],
  ['temporal', 'the Temporal server'],
  ['postgres', 'PostgreSQL'],
] as const;

/** CPU ms per new child of each of the app's processes over one phase. */
export function cpuMsPerChildByProcess(cpu: PhaseCpu, children: number): Record<(typeof appProcesses)[number][0], number> | null {
  if (children <= 0) return null;
  const per = (name: string) => round(((cpu.cpuS[name] ?? 0) * 1000) / children, 1);
  return { ingress: per('ingress'), worker: per('worker'), temporal: per('temporal'), postgres: per('postgres') };
}

/** Why a completion p99 missed at a rate, from the CPU a child took, the machine's cores and what others took of them. */
function completionBound(cpuMsPerChild: number | null, childrenPerS: number, cores: number, otherCores: number | null): string {
  if (cpuMsPerChild === null) return 'Children waited in the outbox and the workflow task queue.';
  const needed = round((cpuMsPerChild * childrenPerS) / 1000, 1);
  const machine = `the machine has ${cores}${otherCores ? `, others taking ${otherCores}` : ''}`;
  return needed > cores - (otherCores ?? 0)
    ? `At ${cpuMsPerChild} CPU-ms per child, ${childrenPerS} children/s need ${needed} cores; ${machine}: ` +
        'children wait for CPU in the outbox and the workflow task queue.'
    : `Not CPU alone: at ${cpuMsPerChild} CPU-ms per child, ${childrenPerS} children/s need ${needed} cores; ${machine}.`;
}

/** A machine this busy is saturated: its other work may have bound any figure. */
const saturatedShare = 0.9;

export function evaluateTargets(report: Omit<BenchReport, 'targets'>, openAlbumsTarget: number): Target[] {
  const cores = report.machine.cores;
  const closedLoop = report.ingest.find((step) => step.rate === null);
  const alone = closedLoop?.ingressAlone;
  const openLoop = report.ingest.filter((step) => step.rate !== null && step.p99Ratio !== null);
  const worstP99 = openLoop.reduce<IngestStep | null>((worst, step) => (worst && worst.p99Ratio! >= step.p99Ratio! ? worst : step), null);
  const sustained = report.endToEnd.find((e) => e.phase === report.sustainedPhase);
  const appCpu = (phase: string) => {
    const cpu = report.cpu.find((p) => p.phase === `${phase}, app`);
    const cost = report.temporalCost.find((c) => c.phase === phase);
    return cpu && cost ? { cpu, children: cost.children } : null;
  };
  const burst = report.temporalCost.find((c) => c.phase === report.burstPhase);
  const sustainedCounts = report.temporalCounts.find((c) => c.phase === report.sustainedPhase);
  const baselineCounts = report.temporalCounts.find((c) => c.phase === report.baselinePhase);
  const sustainedMedia = sustained?.media != null;
  const memory = Object.entries(report.scale.processes).filter(([name]) => name === 'ingress' || name === 'worker');
  const delivery = report.delivery;
  const sharedCores = 'The worker and the Temporal server work through the children on the same cores';
  const missed = (met: boolean | null, bound: () => string | null) => (met === false ? bound() : null);

  const throughputMet = closedLoop?.throughputRatio == null ? null : closedLoop.throughputRatio >= targetLimits.throughputRatio;
  const groupCommitMet =
    alone?.throughputRatio == null || alone.p99Ratio === null
      ? null
      : alone.throughputRatio >= targetLimits.groupCommitRatio && alone.p99Ratio <= 1;
  const worstAlone = worstP99?.ingressAlone;
  const p99Met = worstP99 ? worstP99.p99Ratio! <= targetLimits.p99Ratio : null;
  const completionP99 = sustained?.withTotal.ms.p99 ?? null;
  const completionMet =
    sustained === undefined || completionP99 === null
      ? null
      : completionP99 <= targetLimits.endToEndP99Ms && sustained.childrenPerS >= targetLimits.sustainedChildrenPerS;
  // The CPU target's figure is the dev server's knee step at its rate, with downloads.
  const cpuSearch = report.knee.find((knee) => knee.server === 'dev' && knee.media);
  const cpuStep = cpuSearch?.steps.find((s) => s.rate === targetLimits.cpuRate);
  const cpuNotMeasured = (): string => {
    const lastStep = cpuSearch?.steps.at(-1);
    if (cpuSearch?.notMeasured) return `the dev server's knee search with media: ${cpuSearch.notMeasured}`;
    if (!lastStep) return 'the knee phase did not run';
    return lastStep.rate < targetLimits.cpuRate
      ? `the dev server's knee search with media stopped at ${lastStep.rate}/s`
      : `the dev server's knee search with media had no step at ${targetLimits.cpuRate}/s`;
  };
  const cpuMet = cpuStep?.cpuMsPerChild == null ? null : cpuStep.cpuMsPerChild <= targetLimits.cpuMsPerChild;
  const signalsMet = burst?.signalsPerChild == null ? null : burst.signalsPerChild <= targetLimits.signalsPerChild;
  const actionsMet =
    sustainedCounts && sustainedMedia ? sustainedCounts.perPhoto.billableActions <= targetLimits.billableActionsPerPhoto : null;
  const tracing = report.tracing ? tracingSummary(report.tracing) : null;
  const within = (key: keyof TracingFigures) => {
    if (!tracing) return null;
    const off = tracing.means.off[key];
    const sampledOut = tracing.means['sampled out'][key];
    const noise = tracing.noise[key];
    return off === null || sampledOut === null || noise === null ? null : Math.abs(sampledOut - off) <= noise;
  };
  const tracingMet =
    within('ingressCpuMsPerRequest') === null || within('ackP99Ms') === null
      ? null
      : within('ingressCpuMsPerRequest')! && within('ackP99Ms')!;

  return [
    {
      name: 'Ingest throughput (closed loop)',
      target: `≥ ${targetLimits.throughputRatio * 100}% of the ceiling's req/s`,
      measured: closedLoop
        ? `${closedLoop.app.acceptedPerS} vs ${closedLoop.ceiling.acceptedPerS} req/s: ${pct(closedLoop.throughputRatio)}`
        : 'not measured',
      met: throughputMet,
      bound: missed(throughputMet, () =>
        alone ? `${sharedCores}; the ingress alone took ${pct(alone.throughputRatio)} of the ceiling's req/s.` : `${sharedCores}.`,
      ),
    },
    {
      name: 'Group commit (closed loop, ingress alone)',
      target: `≥ ${targetLimits.groupCommitRatio}× the ceiling's req/s at a p99 ack no higher`,
      measured: alone
        ? `${alone.throughputRatio}× (${alone.stats.acceptedPerS} vs ${closedLoop.ceiling.acceptedPerS} req/s), ` +
          `p99 ${alone.stats.ackMs.p99} vs ${closedLoop.ceiling.ackMs.p99} ms`
        : 'not measured',
      met: groupCommitMet,
      bound: missed(groupCommitMet, () => {
        const cpu = report.cpu.find((p) => p.phase === `${ingestPhase(null)}, ingress alone`);
        if (cpu && cpu.machineBusyCores >= saturatedShare * cores) {
          return `CPU: the machine was busy ${cpu.machineBusyCores} of its ${cores} cores through the step (others ${cpu.otherCores}).`;
        }
        return (
          `Its batch cycle, not CPU${cpu ? ` (the machine was busy ${cpu.machineBusyCores} of its ${cores} cores)` : ''}: a request ` +
          "waits for the batch being written, then for its own, so the ratio follows PostgreSQL's commit time on the hour."
        );
      }),
    },
    {
      name: 'Ingest p99 ack (worst open-loop step)',
      target: `≤ ${targetLimits.p99Ratio}× the ceiling's p99`,
      measured: worstP99
        ? `${worstP99.p99Ratio}× at ${worstP99.rate} req/s (${worstP99.app.ackMs.p99} vs ${worstP99.ceiling.ackMs.p99} ms)`
        : 'not measured',
      met: p99Met,
      bound: missed(p99Met, () =>
        worstAlone ? `${sharedCores}; the ingress alone's p99 at that step was ${worstAlone.p99Ratio}× the ceiling's.` : `${sharedCores}.`,
      ),
    },
    {
      name: 'Album completion p99 (total known)',
      target: `≤ ${targetLimits.endToEndP99Ms} ms at ≥ ${targetLimits.sustainedChildrenPerS} children/s`,
      measured: sustained
        ? `${duration(completionP99)} at ${sustained.childrenPerS} children/s (${sustained.withTotal.albums} albums)`
        : 'not measured',
      met: completionMet,
      bound: missed(completionMet, () => {
        if (completionP99! <= targetLimits.endToEndP99Ms)
          return `The offered rate brought ${sustained!.childrenPerS} new children/s, under the target's.`;
        const figures = appCpu(report.sustainedPhase);
        return completionBound(
          figures ? appCpuMsPerChild(figures.cpu, figures.children) : null,
          sustained!.childrenPerS,
          cores,
          figures?.cpu.otherCores ?? null,
        );
      }),
    },
    ...report.knee.map((knee): Target => {
      const missedStep = knee.steps.find((step) => !step.met);
      const met = knee.steps.length === 0 ? null : (knee.highestMet ?? 0) >= targetLimits.sustainedChildrenPerS;
      return {
        name: `Completion p99 (total known): the knee, ${kneeLabel(knee)}`,
        target:
          `the highest rate at which it stays within ${duration(knee.targetMs)} (the quiet period + 500 ms), ` +
          `≥ ${targetLimits.sustainedChildrenPerS} children/s`,
        measured: knee.notMeasured
          ? `not measured: ${knee.notMeasured}`
          : knee.steps.length === 0
            ? 'not measured'
            : (knee.highestMet === null ? `none from ${knee.steps[0]!.rate}/s up` : `${knee.highestMet} children/s`) +
              (missedStep
                ? ` (${missedStep.rate}/s offered: p99 ${duration(missedStep.p99Ms)} at ${missedStep.childrenPerS} children/s)`
                : ', the highest step'),
        met,
        bound: missed(met, () =>
          missedStep
            ? completionBound(missedStep.cpuMsPerChild, missedStep.childrenPerS, cores, missedStep.otherCores)
            : 'The search ended at its highest rate.',
        ),
      };
    }),
    {
      name: `CPU ms per new child at ${targetLimits.cpuRate} children/s (with downloads)`,
      target: `≤ ${targetLimits.cpuMsPerChild} (the ingress, the worker, the Temporal server, PostgreSQL)`,
      measured: cpuStep ? `${cpuStep.cpuMsPerChild} at ${cpuStep.childrenPerS} children/s` : `not measured (${cpuNotMeasured()})`,
      met: cpuMet,
      bound: missed(cpuMet, () => {
        const figures = appCpu(kneePhase(cpuSearch!, cpuStep!.rate));
        const per = figures ? cpuMsPerChildByProcess(figures.cpu, figures.children) : null;
        const parts = per
          ? `Per child, ${[...appProcesses]
              .sort(([a], [b]) => per[b] - per[a])
              .map(([name, label]) => `${label} ${per[name]}`)
              .join(', ')} ms`
          : 'The Temporal work per album';
        const album = sustainedCounts?.perAlbum;
        return album
          ? `${parts}; an album takes ${album.workflowTasks} workflow tasks and ${album.historyEvents} history events whatever its size, ` +
              'and the worker and the server pay per task and per event.'
          : `${parts}.`;
      }),
    },
    {
      name: 'Signals per child (10-photo bursts)',
      target: `≤ ${targetLimits.signalsPerChild}`,
      measured: burst ? `${burst.signalsPerChild} (${burst.signalWithStarts} signals / ${burst.children} children)` : 'not measured',
      met: signalsMet,
      bound: missed(
        signalsMet,
        () =>
          "An album's children reached the dispatcher further apart than it waits for the next ones, so albums took more than one signal.",
      ),
    },
    {
      name: 'Billable Temporal actions per photo (sustained, with downloads)',
      target: `≤ ${targetLimits.billableActionsPerPhoto}`,
      measured: sustainedCounts
        ? `${sustainedCounts.perPhoto.billableActions} (${sustainedCounts.total.billableActions} actions / ${sustainedCounts.photos} photos` +
          `${sustainedMedia ? '' : ', no downloads: --no-media'})` +
          (baselineCounts ? `; the baseline configuration: ${baselineCounts.perPhoto.billableActions}` : '')
        : 'not measured',
      met: actionsMet,
      bound: missed(actionsMet, () => {
        const album = sustainedCounts!.perAlbum;
        return (
          `${album.billableActions} actions per album (${album.workflowTasks} workflow tasks, ${album.activities} activities, ` +
          `${album.timersStarted} timers) over ${round(sustainedCounts!.photos / sustainedCounts!.albums, 1)} photos per album.`
        );
      }),
    },
    ...(['directory', 's3'] as const).map((store): Target => {
      const floor = report.mediaStore?.variants.find((variant) => variant.store === store)?.floor;
      const met = floor?.ratio == null ? null : floor.ratio <= targetLimits.downloadFloorRatio;
      return {
        name: `Worker CPU per downloaded photo, ${store === 's3' ? 'S3' : 'directory'} store (media store)`,
        target: `≤ ${targetLimits.downloadFloorRatio}× a bare GET → SHA-256 → store loop's over the same files`,
        measured:
          floor?.ratio != null
            ? `${floor.ratio}× (${floor.workerCpuMsPerDownload} vs ${floor.floorCpuMsPerFile} ms: the worker ${round(
                (floor.workerCpuMsPerDownload ?? 0) + (floor.noMediaCpuMsPerChild ?? 0),
                1,
              )} ms per child with the photo, ${floor.noMediaCpuMsPerChild} without; the floor over ${floor.floorFiles} files)`
            : 'not measured',
        met,
        bound: missed(
          met,
          () =>
            `${round((floor!.workerCpuMsPerDownload ?? 0) - (floor!.floorCpuMsPerFile ?? 0), 2)} ms per photo over the floor: ` +
            "each download's bookkeeping (its activity task, the workflow task taking its result, its record in PostgreSQL).",
        ),
      };
    }),
    ...memory.map(([name, m]): Target => {
      const worst = Math.max(m.peakRssMB ?? 0, m.hwmMB ?? 0);
      const met = m.hwmMB === null ? null : worst <= targetLimits.rssMB && report.scale.openAlbums >= openAlbumsTarget;
      return {
        name: `Peak RSS, ${name}`,
        target: `≤ ${targetLimits.rssMB} MB with ${openAlbumsTarget} open albums`,
        measured: `${worst} MB (VmHWM ${m.hwmMB}, sampled ${m.peakRssMB}; ${report.scale.openAlbums} open)`,
        met,
        bound: missed(met, () => {
          if (worst <= targetLimits.rssMB) return `Only ${report.scale.openAlbums} albums were open.`;
          return name === 'worker'
            ? "The top-up's backlog, not the open albums: the main thread's V8 heap (155–232 MB at the peaks, about 60 MB of it " +
                "live), the mapped binaries (70 MB), glibc's heaps (60–70 MB with the worker's fixed mmap threshold), the " +
                "workflow thread's heap (about 63 MB) and tsx's loader thread (12–31 MB; not in the built image)."
            : 'Not examined yet.';
        }),
      };
    }),
    {
      name: 'Tracing on, every trace sampled out (ingest)',
      target: "ingress CPU per request and p99 ack within the noise of the same load with tracing off (two rounds' difference)",
      measured: tracing
        ? `${tracing.means['sampled out'].ingressCpuMsPerRequest} vs ${tracing.means.off.ingressCpuMsPerRequest} CPU-ms per request ` +
          `(noise ${tracing.noise.ingressCpuMsPerRequest}); p99 ${tracing.means['sampled out'].ackP99Ms} vs ${tracing.means.off.ackP99Ms} ms ` +
          `(noise ${tracing.noise.ackP99Ms})`
        : 'not measured',
      met: tracingMet,
      bound: missed(tracingMet, () => 'Not examined yet.'),
    },
    {
      name: 'Backlog drain after an outage (delivery)',
      target: "≤ the endpoint's rate limit; every notification delivered, in order per album",
      measured: delivery
        ? `${delivery.drain.drainPerS ?? '–'}/s at a rate limit of ${delivery.drain.rateLimit}/s (${delivery.drain.rateRatio ?? '–'}×; ` +
          `attempts paced at ${delivery.drain.pacePerS ?? '–'}/s), a backlog of ${delivery.drain.backlog}; delivered in order: ` +
          `${delivery.drain.check.ok && delivery.throughput.check.ok ? 'yes' : 'no'}`
        : 'not measured',
      met: delivery ? delivery.ok : null,
      bound: missed(delivery?.ok ?? null, () =>
        delivery!.drain.withinRateLimit
          ? 'A defect: the Outbound delivery section names what is missing.'
          : "A defect: the engine sent faster than the endpoint's rate limit.",
      ),
    },
    {
      name: 'Correctness',
      target: 'every accepted child in a decision; no duplicate album.ready; every attachment with a URL downloaded',
      measured:
        `${report.correctness.missingFromDecisions} missing of ${report.correctness.acceptedChildren}; ${report.correctness.duplicateAlbumReady} duplicate album.ready` +
        (report.correctness.media
          ? `; ${Object.values(report.correctness.media.notDownloaded).reduce((sum, n) => sum + n, 0)} of ${report.correctness.media.attachments} attachments not downloaded`
          : ''),
      met: report.correctness.ok,
      bound: missed(report.correctness.ok, () => 'A defect: the Correctness section names what is missing.'),
    },
  ];
}

/** The completion p99 (total known) a knee step must stay within: the quiet period plus this. */
const kneeMarginMs = 500;

/** The completion p99 (total known) a knee step must stay within, for a run's QUIET_PERIOD_MS. */
export function kneeTargetMs(quietPeriodMs: number): number {
  return quietPeriodMs + kneeMarginMs;
}

/** Whether a knee step's completion p99 (total known) stayed within its target. */
export function kneeStepMet(p99Ms: number | null, targetMs: number): boolean {
  return p99Ms !== null && p99Ms <= targetMs;
}

/** A ratio as a whole percentage. */
export function pct(value: number | null): string {
  return value === null ? 'n/a' : `${Math.round(value * 100)}%`;
}
