// What a bench run does and how big it is: the options, their defaults, the tiny size the test runs,
// and the command line of `npm run bench`.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { maxRateLimit } from '../src/delivery/endpoints.js';
import type { AlbumShape } from './workload.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const phaseNames = [
  'ingest',
  'routes',
  'tracing',
  'media-store',
  'delivery',
  'sustained',
  'burst',
  'baseline',
  'knee',
  'scale',
] as const;
export type PhaseName = (typeof phaseNames)[number];

export interface BenchOptions {
  /** Which sections to run (the others are reported as not measured). */
  phases: PhaseName[];
  /** Offered rates of the open-loop ingest steps, requests/s (the first also of the routes and tracing steps). */
  rates: number[];
  stepSeconds: number;
  /** Requests in flight at most in the open-loop steps. */
  concurrency: number;
  /** Requests in flight in the closed-loop step. */
  closedLoopConcurrency: number;
  warmupSeconds: number;
  /** Offered rate of the end-to-end phase, requests/s (5% are redeliveries). */
  sustainedRate: number;
  sustainedSeconds: number;
  /** 10-photo albums per second in the burst phase, all children of an album sent at once. */
  burstAlbumsPerSecond: number;
  burstSeconds: number;
  /**
   * The knee searches (on the dev server and on the real server, each with and without media): sustained
   * steps from kneeStartRate up by kneeStepRate (children/s offered), each kneeSeconds long, until the
   * completion p99 (total known) leaves the quiet period + 500 ms or kneeMaxRate is passed.
   */
  kneeStartRate: number;
  kneeStepRate: number;
  kneeMaxRate: number;
  kneeSeconds: number;
  /**
   * The media store phase: the same download-heavy albums (photos of a few hundred KB, some 50 MB videos)
   * at this offered rate, requests/s, for this long, to an app on the directory store and one on S3.
   */
  mediaStoreRate: number;
  mediaStoreSeconds: number;
  /**
   * The delivery phase's throughput step: this many notifications (three per album) to one endpoint at the
   * highest rate limit, sent by the delivery engine and then by the ceiling, each with deliveryConcurrency
   * requests in flight (DELIVERY_CONCURRENCY).
   */
  deliveryNotifications: number;
  deliveryConcurrency: number;
  /**
   * The delivery phase's drain: an endpoint at this rate limit (requests/s) answers 503 for deliveryOutageSeconds
   * while deliveryBacklog notifications are recorded, then recovers.
   */
  deliveryRateLimit: number;
  deliveryOutageSeconds: number;
  deliveryBacklog: number;
  /** Albums kept open (late window) before memory is read; small albums are added to reach it. */
  openAlbums: number;
  /** Offered rate of the scale top-up, requests/s (below the pipeline's capacity, so memory is read at steady state). */
  scaleRate: number;
  quietPeriodMs: number;
  maxWaitMs: number;
  lateWindowMs: number;
  albums: AlbumShape;
  redeliveryShare: number;
  seed: number;
  /**
   * Every child of the sustained and burst phases carries an attachment URL on the bench's media server,
   * so the worker downloads it; false: no URL, no download (the mix of runs before the media server).
   */
  media: boolean;
  /** The media server's mean time to first byte, ms (each response draws from half to one and a half of it). */
  mediaFirstByteMs: number;
  /** The media server's throughput per response, MB/s (10^6 bytes). */
  mediaMegabytesPerSecond: number;
  /** How long to wait for every accepted child of a phase to be decided (and its media settled). */
  settleTimeoutMs: number;
  /**
   * Run the ingress, the worker, the ceiling and the ingress alone with --cpu-prof, and sample the Temporal
   * server with Linux `perf` (profiles under the run's results folder).
   */
  profile: boolean;
  /** The PostgreSQL server the run's databases are created on (as DATABASE_URL; its database name is ignored). */
  databaseUrl: string | undefined;
  /** Use this Temporal frontend instead of starting a dev server. */
  temporalAddress: string | undefined;
  resultsDir: string;
  /** The BENCHMARKS.md whose run section the run's replaces; null: no file is written. */
  benchmarksPath: string | null;
  log: (line: string) => void;
  signal?: AbortSignal;
}

export const defaultOptions: BenchOptions = {
  phases: [...phaseNames],
  rates: [100, 200, 400],
  stepSeconds: 10,
  concurrency: 64,
  closedLoopConcurrency: 32,
  warmupSeconds: 15,
  sustainedRate: 150,
  sustainedSeconds: 20,
  burstAlbumsPerSecond: 20,
  burstSeconds: 10,
  kneeStartRate: 25,
  kneeStepRate: 25,
  kneeMaxRate: 400,
  kneeSeconds: 10,
  mediaStoreRate: 30,
  mediaStoreSeconds: 10,
  deliveryNotifications: 3000,
  deliveryConcurrency: 4,
  deliveryRateLimit: 100,
  deliveryOutageSeconds: 10,
  deliveryBacklog: 1000,
  openAlbums: 5000,
  scaleRate: 100,
  quietPeriodMs: 1000,
  maxWaitMs: 60_000,
  lateWindowMs: 3_600_000,
  albums: { minChildren: 1, maxChildren: 10, totalShare: 0.5 },
  redeliveryShare: 0.05,
  seed: 20260929,
  media: true,
  mediaFirstByteMs: 60,
  mediaMegabytesPerSecond: 25,
  settleTimeoutMs: 300_000,
  profile: false,
  databaseUrl: process.env.DATABASE_URL,
  temporalAddress: undefined,
  resultsDir: path.join(repoRoot, 'bench', 'results'),
  benchmarksPath: path.join(repoRoot, 'BENCHMARKS.md'),
  log: (line) => process.stderr.write(`${line}\n`),
};

/** Seconds, not minutes: what the test runs to prove the harness works. */
export const tinyOptions: Partial<BenchOptions> = {
  rates: [20],
  stepSeconds: 2,
  concurrency: 8,
  closedLoopConcurrency: 4,
  warmupSeconds: 0,
  sustainedRate: 20,
  sustainedSeconds: 2,
  burstAlbumsPerSecond: 2,
  burstSeconds: 2,
  kneeStartRate: 20,
  kneeStepRate: 10,
  kneeMaxRate: 30,
  kneeSeconds: 2,
  mediaStoreRate: 10,
  mediaStoreSeconds: 2,
  deliveryNotifications: 150,
  deliveryRateLimit: 50,
  deliveryOutageSeconds: 2,
  deliveryBacklog: 60,
  openAlbums: 100,
  quietPeriodMs: 300,
  maxWaitMs: 20_000,
  settleTimeoutMs: 120_000,
};

const usage =
  'npm run bench -- [--tiny] [--phases ingest,routes,tracing,media-store,delivery,sustained,burst,baseline,knee,scale] [--rates 100,200,400]\n' +
  '  [--step-seconds 10] [--media-store-rate 30] [--media-store-seconds 10]\n' +
  '  [--delivery-notifications 3000] [--delivery-concurrency 4] [--delivery-rate-limit 100] [--delivery-outage-seconds 10] [--delivery-backlog 1000]\n' +
  '  [--concurrency 64] [--closed-loop-concurrency 32] [--warmup-seconds 15] [--sustained-rate 150] [--sustained-seconds 20]\n' +
  '  [--burst-albums-per-second 20] [--burst-seconds 10] [--knee-start-rate 25] [--knee-step-rate 25] [--knee-max-rate 400]\n' +
  '  [--knee-seconds 10] [--open-albums 5000] [--scale-rate 100] [--quiet-period-ms 1000]\n' +
  '  [--no-media] [--media-first-byte-ms 60] [--media-mb-per-s 25] [--seed N] [--profile] [--no-benchmarks-md]\n' +
  "The sustained, burst, media-store and knee phases download every child's attachment from a local media server (--no-media: none);\n" +
  'the media-store phase runs an S3-compatible server of its own (npm run s3:install builds it);\n' +
  'the delivery phase runs the delivery engine and its ceiling (a bare signed POST loop) as processes of their own;\n' +
  'the knee searches run on the dev server and on the real Temporal server (npm run temporal:cluster -- --install builds it),\n' +
  'each with and without media.\n' +
  'DATABASE_URL names the PostgreSQL server (fresh databases are created on it and dropped after; unset: an embedded one of the run);\n' +
  'TEMPORAL_ADDRESS, when set, is used instead of starting a dev server.\n' +
  '--profile writes CPU profiles of the Node processes (--cpu-prof) and, with `perf` on PATH, of the Temporal server.\n' +
  "The run's section of BENCHMARKS.md replaces the previous run's (--no-benchmarks-md: the file is left as it is).\n";

/** The options a command line sets, or null when it asked for --help (printed). */
export function parseOptions(argv: string[]): Partial<BenchOptions> | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      tiny: { type: 'boolean' },
      phases: { type: 'string' },
      rates: { type: 'string' },
      'step-seconds': { type: 'string' },
      concurrency: { type: 'string' },
      'closed-loop-concurrency': { type: 'string' },
      'warmup-seconds': { type: 'string' },
      'sustained-rate': { type: 'string' },
      'sustained-seconds': { type: 'string' },
      'burst-albums-per-second': { type: 'string' },
      'burst-seconds': { type: 'string' },
      'knee-start-rate': { type: 'string' },
      'knee-step-rate': { type: 'string' },
      'knee-max-rate': { type: 'string' },
      'knee-seconds': { type: 'string' },
      'media-store-rate': { type: 'string' },
      'media-store-seconds': { type: 'string' },
      'delivery-notifications': { type: 'string' },
      'delivery-concurrency': { type: 'string' },
      'delivery-rate-limit': { type: 'string' },
      'delivery-outage-seconds': { type: 'string' },
      'delivery-backlog': { type: 'string' },
      'open-albums': { type: 'string' },
      'scale-rate': { type: 'string' },
      'quiet-period-ms': { type: 'string' },
      'no-media': { type: 'boolean' },
      'media-first-byte-ms': { type: 'string' },
      'media-mb-per-s': { type: 'string' },
      seed: { type: 'string' },
      profile: { type: 'boolean' },
      'no-benchmarks-md': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return null;
  }
  const number = (value: string | undefined, name: string): number | undefined => {
    if (value === undefined) return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} must be a non-negative number`);
    return parsed;
  };
  const options: Partial<BenchOptions> = values.tiny ? { ...tinyOptions } : {};
  const set = <K extends keyof BenchOptions>(key: K, value: BenchOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  set(
    'phases',
    values.phases?.split(',').map((name) => {
      if (!(phaseNames as readonly string[]).includes(name)) throw new Error(`--phases takes ${phaseNames.join(', ')}`);
      return name as PhaseName;
    }),
  );
  set(
    'rates',
    values.rates?.split(',').map((rate) => number(rate, 'rates')!),
  );
  set('stepSeconds', number(values['step-seconds'], 'step-seconds'));
  set('concurrency', number(values.concurrency, 'concurrency'));
  set('closedLoopConcurrency', number(values['closed-loop-concurrency'], 'closed-loop-concurrency'));
  set('warmupSeconds', number(values['warmup-seconds'], 'warmup-seconds'));
  set('sustainedRate', number(values['sustained-rate'], 'sustained-rate'));
  set('sustainedSeconds', number(values['sustained-seconds'], 'sustained-seconds'));
  set('burstAlbumsPerSecond', number(values['burst-albums-per-second'], 'burst-albums-per-second'));
  set('burstSeconds', number(values['burst-seconds'], 'burst-seconds'));
  set('kneeStartRate', number(values['knee-start-rate'], 'knee-start-rate'));
  set('kneeStepRate', number(values['knee-step-rate'], 'knee-step-rate'));
  set('kneeMaxRate', number(values['knee-max-rate'], 'knee-max-rate'));
  set('kneeSeconds', number(values['knee-seconds'], 'knee-seconds'));
  if (options.kneeStepRate === 0) throw new Error('--knee-step-rate must be above 0');
  set('mediaStoreRate', number(values['media-store-rate'], 'media-store-rate'));
  set('mediaStoreSeconds', number(values['media-store-seconds'], 'media-store-seconds'));
  set('deliveryNotifications', number(values['delivery-notifications'], 'delivery-notifications'));
  set('deliveryConcurrency', number(values['delivery-concurrency'], 'delivery-concurrency'));
  if (
    options.deliveryConcurrency !== undefined &&
    !(Number.isInteger(options.deliveryConcurrency) && options.deliveryConcurrency >= 1 && options.deliveryConcurrency <= 64)
  )
    throw new Error('--delivery-concurrency takes a whole number from 1 to 64 (DELIVERY_CONCURRENCY)');
  set('deliveryRateLimit', number(values['delivery-rate-limit'], 'delivery-rate-limit'));
  if (
    options.deliveryRateLimit !== undefined &&
    !(Number.isInteger(options.deliveryRateLimit) && options.deliveryRateLimit >= 1 && options.deliveryRateLimit <= maxRateLimit)
  )
    throw new Error(`--delivery-rate-limit takes a whole number of requests a second from 1 to ${maxRateLimit}`);
  set('deliveryOutageSeconds', number(values['delivery-outage-seconds'], 'delivery-outage-seconds'));
  set('deliveryBacklog', number(values['delivery-backlog'], 'delivery-backlog'));
  set('openAlbums', number(values['open-albums'], 'open-albums'));
  set('scaleRate', number(values['scale-rate'], 'scale-rate'));
  set('quietPeriodMs', number(values['quiet-period-ms'], 'quiet-period-ms'));
  if (values['no-media']) options.media = false;
  set('mediaFirstByteMs', number(values['media-first-byte-ms'], 'media-first-byte-ms'));
  set('mediaMegabytesPerSecond', number(values['media-mb-per-s'], 'media-mb-per-s'));
  if (options.mediaMegabytesPerSecond === 0) throw new Error('--media-mb-per-s must be above 0');
  set('seed', number(values.seed, 'seed'));
  set('profile', values.profile);
  if (values['no-benchmarks-md']) options.benchmarksPath = null;
  if (process.env.TEMPORAL_ADDRESS) options.temporalAddress = process.env.TEMPORAL_ADDRESS;
  return options;
}
