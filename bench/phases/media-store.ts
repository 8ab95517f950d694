// The media store's cost: two apps alike but for where the worker puts what it downloads — the directory
// store (MEDIA_DIR, the default) and an S3 bucket (MEDIA_STORE) on a Versity S3 Gateway of the run — take
// the same download-heavy albums in turn: a round of photos only, then two rounds with 50 MB videos among
// them, in alternating order (the difference between those two rounds of one store is the noise). Each
// child's file has bytes of its own (the media server's /unique/ path), so every download is stored, none
// found there already. A worker that streams holds a chunk of a video at a time: its peak RSS with the
// videos stays near its peak with photos only. Afterwards every photo must be `downloaded` and its object
// in the store exactly once, at its size (the bucket listed through the S3 API).
import fs from 'node:fs';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { userEnvironment } from '../../test/harness/environment.js';
import { NodeProcess, cpuSeconds, pidsListeningOn, readMemory } from '../../test/harness/processes.js';
import { attachments } from '../../test/harness/rows.js';
import { s3Server, type S3Server } from '../../test/harness/servers/s3.js';
import { downloadFloorReadyLine, type FloorMessage, type FloorReply } from '../download-floor.js';
import { newChildren } from '../records.js';
import {
  megabytes,
  ratio,
  round,
  type DownloadFloor,
  type MediaStoreCheck,
  type MediaStoreKind,
  type MediaStoreRound,
  type MediaStoreStep,
} from '../report.js';
import type { VariantApp } from '../stack.js';
import type { ServedMedia } from '../workload.js';
import { ask, type PhaseContext } from './context.js';

const rounds = 2;
const bucket = 'albumflow-bench';
const prefix = 'media';
const largeFile = 'video-50mb.mp4';
/** The phase's mix: mostly photos of a few hundred KB, some originals, one child in fifty a 50 MB video. */
const weights: Record<string, number> = {
  'photo-small.jpg': 8,
  'photo.jpg': 8,
  'photo-large.jpg': 3,
  'photo-original.jpg': 1,
  [largeFile]: 0.4,
};
const stores: MediaStoreKind[] = ['directory', 's3'];
/** The name the S3 server's CPU is watched as while the phase runs. */
const s3Process = 's3 store';
/** The bucket the floor puts its files in (the app's bucket holds only the app's objects, which the check lists). */
const floorBucket = 'albumflow-floor';
/** Files the floor fetches at once. */
const floorConcurrency = 8;

/**
 * The floor's CPU per file over `urls`: bench/download-floor.ts, a process of its own, fetches each from
 * the media server and puts it into a store of `store`'s kind (a directory of the run's, or the floor's
 * bucket on the same S3 server).
 */
async function measureFloor(
  ctx: PhaseContext,
  store: MediaStoreKind,
  urls: readonly string[],
  s3: S3Server,
): Promise<{ files: number; cpuMsPerFile: number | null }> {
  const { stack, options } = ctx;
  if (urls.length === 0) return { files: 0, cpuMsPerFile: null };
  const name = `download floor ${store}`;
  const dir = path.join(stack.runDir, `floor-${store}`);
  fs.mkdirSync(dir, { recursive: true });
  const urlsFile = path.join(dir, 'urls.json');
  fs.writeFileSync(urlsFile, JSON.stringify(urls));
  const floor = new NodeProcess({
    name,
    script: 'bench/download-floor.ts',
    env: {
      ...userEnvironment(),
      DOWNLOAD_FLOOR_URLS: urlsFile,
      DOWNLOAD_FLOOR_CONCURRENCY: String(floorConcurrency),
      ...(store === 's3'
        ? {
            ...s3.env(),
            DOWNLOAD_FLOOR_BUCKET: floorBucket,
            DOWNLOAD_FLOOR_PREFIX: prefix,
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          }
        : { DOWNLOAD_FLOOR_DIR: dir }),
    },
    ready: new RegExp(downloadFloorReadyLine),
    nodeArgs: stack.profileArgs(`floor-${store}`),
    logFile: path.join(stack.runDir, `floor-${store}.log`),
    ipc: true,
    detached: true,
  });
  options.log(`bench: media store: the download floor on the ${store} store (${urls.length} files)`);
  await floor.start();
  stack.watched[name] = floor.pid!;
  try {
    const before = cpuSeconds(floor.pid!) ?? 0;
    const reply = await ctx.measureCpu(`media store: download floor, ${store}`, () =>
      ask<FloorReply>(floor, { type: 'run' } satisfies FloorMessage, options.signal),
    );
    if (reply.type === 'error') throw new Error(`download floor: ${reply.message}`);
    const cpuS = (cpuSeconds(floor.pid!) ?? 0) - before;
    return { files: reply.files, cpuMsPerFile: round((cpuS * 1000) / reply.files, 2) };
  } finally {
    delete stack.watched[name];
    await floor.stop();
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

/** Resets the process's VmHWM to its RSS now (clear_refs 5); false when this kernel or process does not allow it. */
function resetPeakRss(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    return false;
  }
  const memory = readMemory(pid);
  return memory !== null && memory.hwm <= memory.rss * 1.05;
}

/** Every file under `dir` (recursively) that is an object, not its `.type` file beside it: relative path → size. */
function listDirectory(dir: string, under: string): Map<string, number> {
  const objects = new Map<string, number>();
  const walk = (relative: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(dir, relative), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const key = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(key);
      else if (!entry.name.endsWith('.type')) objects.set(key, fs.statSync(path.join(dir, key)).size);
    }
  };
  walk(under);
  return objects;
}

/** Every object of the bucket (key → size), page by page. */
async function listBucket(s3: S3Server): Promise<{ objects: Map<string, number>; listings: number }> {
  // The SDK warns once per process that its releases after January 2027 need Node.js 22; not this lock's.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const client = new S3Client({
    endpoint: s3.endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  const objects = new Map<string, number>();
  let listings = 0;
  try {
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        listings += 1;
        objects.set(object.Key!, object.Size ?? -1);
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  } finally {
    client.destroy();
  }
  return { objects, listings };
}

/** The app's rows against its store: every photo downloaded, its object there once at its size, nothing else there. */
async function checkStore(app: VariantApp, s3: S3Server | null, largeBytes: number): Promise<MediaStoreCheck> {
  const rows = (await attachments.read(app.pool, {}, ['url', 'status', 'sha256', 'bytes'])).filter((row) => row.url !== null);
  const notDownloaded: Record<string, number> = {};
  const expected = new Map<string, number>();
  let downloaded = 0;
  let largeFiles = 0;
  let bytes = 0;
  for (const row of rows) {
    if (row.status !== 'downloaded' || row.sha256 === null) {
      notDownloaded[row.status] = (notDownloaded[row.status] ?? 0) + 1;
      continue;
    }
    downloaded += 1;
    bytes += Number(row.bytes);
    if (Number(row.bytes) === largeBytes) largeFiles += 1;
    expected.set(`sha256/${row.sha256.slice(0, 2)}/${row.sha256}`, Number(row.bytes));
  }
  let listed: Map<string, number>;
  let listings: number;
  let localObjects: number | null = null;
  if (s3) {
    const bucketObjects = await listBucket(s3);
    listings = bucketObjects.listings;
    listed = new Map(
      [...bucketObjects.objects].map(([key, size]) => [key.startsWith(`${prefix}/`) ? key.slice(prefix.length + 1) : `/${key}`, size]),
    );
    // With MEDIA_STORE the worker's MEDIA_DIR holds only its partial downloads.
    localObjects = listDirectory(app.mediaDir, 'sha256').size;
  } else {
    listed = listDirectory(app.mediaDir, 'sha256');
    listings = listed.size;
  }
  const missing = [...expected].filter(([key, size]) => listed.get(key) !== size).length;
  const extra = [...listed.keys()].filter((key) => !expected.has(key)).length + (listings - listed.size);
  const objects = [...listed.keys()].filter((key) => key.startsWith('sha256/')).length;
  return {
    photos: rows.length,
    downloaded,
    notDownloaded,
    largeFiles,
    megabytes: megabytes(bytes) ?? 0,
    objects,
    missing,
    extra,
    localObjects,
    ok: rows.length > 0 && downloaded === rows.length && expected.size === downloaded && missing === 0 && extra === 0 && !localObjects,
  };
}

export async function runMediaStore(ctx: PhaseContext): Promise<MediaStoreStep | null> {
  if (!ctx.runs('media-store')) return null;
  const { options, stack } = ctx;
  const files = (ctx.media?.files ?? []).filter((file) => file.name in weights).map((file) => ({ ...file, weight: weights[file.name]! }));
  const step: MediaStoreStep = {
    rate: options.mediaStoreRate,
    seconds: options.mediaStoreSeconds,
    files: files.map(({ name, bytes, weight }) => ({ name, bytes, weight })),
    unavailable: null,
    variants: [],
    ratios: { workerCpuPerChild: null, workerPeakRss: null, cpuPerChildWithStoreServer: null },
    noiseCpuMsPerChild: null,
    ok: false,
  };
  const unavailable = (why: string): MediaStoreStep => {
    options.log(`bench: media store step not measured: ${why}`);
    return { ...step, unavailable: why };
  };
  if (!ctx.media) return unavailable('no media server (--no-media)');
  if (files.length !== Object.keys(weights).length)
    return unavailable(`the media server does not serve ${Object.keys(weights).join(', ')}`);
  const largeBytes = files.find((file) => file.name === largeFile)!.bytes;
  const media: ServedMedia = { baseUrl: ctx.media.baseUrl, files, unique: true };
  const photosOnly: ServedMedia = { ...media, files: files.map((file) => (file.name === largeFile ? { ...file, weight: 0 } : file)) };

  const root = path.join(stack.runDir, 's3');
  let s3: S3Server | undefined;
  try {
    s3 = await s3Server({ root, log: (message) => options.log(`bench: ${message}`) });
    await s3.start();
  } catch (err) {
    // A server that did not answer in time is still running.
    await s3?.stop();
    return unavailable(`no S3-compatible server (npm run s3:install builds it): ${(err as Error).message}`);
  }
  const apps = new Map<MediaStoreKind, VariantApp>();
  let active = false;
  try {
    s3.createBucket(bucket);
    s3.createBucket(floorBucket);
    const s3Pid = pidsListeningOn(Number(new URL(s3.endpoint).port))[0];
    if (s3Pid !== undefined) stack.watched[s3Process] = s3Pid;
    else options.log(`bench: no process of this machine listens on ${s3.endpoint}; the S3 server's CPU is not measured`);
    options.log('bench: media store step (starting two apps: the directory store, an S3 bucket)');
    apps.set('directory', await stack.startVariant('store directory'));
    apps.set(
      's3',
      await stack.startVariant('store s3', {
        env: { ...s3.env(), MEDIA_STORE: `s3://${bucket}/${prefix}`, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      }),
    );
    // Each worker's RSS from here on, started and idle: its peaks below are the rounds', not its start-up's.
    active = true;
    const memory = new Map<
      MediaStoreKind,
      { idle: number | null; photos: number | null; videos: number | null; from: 'VmHWM' | 'sampled' }
    >();
    for (const [store, app] of apps) {
      stack.sampler.watch(`${app.name} worker`, () => (active ? app.workerPid : undefined));
      memory.set(store, { idle: readMemory(app.workerPid)?.rss ?? null, photos: null, videos: null, from: 'VmHWM' });
    }
    /** Resets each worker's peak, runs the rounds, and reads the peak they reached (VmHWM, else the sampled peak). */
    const peakOver = async (which: 'photos' | 'videos', run: () => Promise<void>) => {
      const reset = new Map([...apps].map(([store, app]) => [store, resetPeakRss(app.workerPid)]));
      const window = `media store: ${which}`;
      stack.sampler.openWindow(window);
      await run();
      stack.sampler.closeWindow(window);
      for (const [store, app] of apps) {
        const entry = memory.get(store)!;
        const hwm = reset.get(store) ? (readMemory(app.workerPid)?.hwm ?? null) : null;
        if (hwm === null) entry.from = 'sampled';
        entry[which] = hwm ?? stack.sampler.peak(window, `${app.name} worker`);
      }
    };
    const roundsOf = new Map<MediaStoreKind, MediaStoreRound[]>(stores.map((store) => [store, []]));
    let s3ServerCpuS = 0;
    /**
     * One store's load of a round: the round's albums (the same for each store; ids of their own, so the bytes
     * are too), with `served` or without media; its new children and the CPU of the phase.
     */
    const loadRound = async (name: string, app: VariantApp, idPrefix: string, r: number, served: ServedMedia | undefined) => {
      const result = await ctx.runVariantPhase(
        name,
        app,
        ctx.loadPhase(app.url, {
          rate: options.mediaStoreRate,
          durationMs: options.mediaStoreSeconds * 1000,
          concurrency: options.concurrency,
          workload: ctx.workload(idPrefix, options.seed + 500 + r, served ? { media: served } : {}),
        }),
        { media: served !== undefined },
      );
      const cpu = ctx.cpu.find((entry) => entry.phase === `${name}, ${app.name}`)!;
      return { children: newChildren(result.records), cpuS: cpu.cpuS, workerCpuS: cpu.cpuS[`${app.name} worker`] ?? 0 };
    };
    const runRound = async (r: number, order: MediaStoreKind[]) => {
      const videos = r > 0;
      for (const store of order) {
        const app = apps.get(store)!;
        const name = `media store: ${store}, round ${r + 1}${videos ? '' : ' (photos only)'}`;
        const { children, cpuS, workerCpuS } = await loadRound(name, app, `ms${r}-${store}`, r, videos ? media : photosOnly);
        if (store === 's3' && videos) s3ServerCpuS += cpuS[s3Process] ?? 0;
        roundsOf.get(store)!.push({
          round: r + 1,
          videos,
          children,
          workerCpuS,
          workerCpuMsPerChild: children > 0 ? round((workerCpuS * 1000) / children, 1) : null,
        });
      }
    };
    // Round 1 photos only; then with the videos, in the order directory, S3, then the other way round.
    await peakOver('photos', () => runRound(0, stores));
    // The photos' downloads against their floor: the same albums again without media, then the bare loop over the round's files.
    const floors = new Map<MediaStoreKind, DownloadFloor>();
    for (const store of stores) {
      const app = apps.get(store)!;
      const { rows } = await app.pool.query<{ url: string }>(`SELECT url FROM attachments WHERE status = 'downloaded' AND url IS NOT NULL`);
      const { children, workerCpuS } = await loadRound(`media store: ${store}, round 1 without media`, app, `ms0n-${store}`, 0, undefined);
      const noMedia = children > 0 ? (workerCpuS * 1000) / children : null;
      const withPhotos = roundsOf.get(store)![0]!.workerCpuMsPerChild;
      const perDownload = noMedia !== null && withPhotos !== null ? round(withPhotos - noMedia, 2) : null;
      const measured = await measureFloor(
        ctx,
        store,
        rows.map((row) => row.url),
        s3,
      );
      floors.set(store, {
        noMediaCpuMsPerChild: noMedia === null ? null : round(noMedia, 2),
        workerCpuMsPerDownload: perDownload,
        floorFiles: measured.files,
        floorCpuMsPerFile: measured.cpuMsPerFile,
        ratio: perDownload !== null ? ratio(perDownload, measured.cpuMsPerFile) : null,
      });
      options.log(
        `bench: media store: ${store}: the worker ${perDownload} CPU-ms per downloaded photo, the floor ${measured.cpuMsPerFile} (${floors.get(store)!.ratio}×)`,
      );
    }
    await peakOver('videos', async () => {
      for (let r = 1; r <= rounds; r++) await runRound(r, r % 2 === 1 ? stores : [...stores].reverse());
    });

    for (const store of stores) {
      const app = apps.get(store)!;
      const storeRounds = roundsOf.get(store)!;
      const mixed = storeRounds.filter((run) => run.videos);
      const children = mixed.reduce((sum, run) => sum + run.children, 0);
      const cpuS = mixed.reduce((sum, run) => sum + run.workerCpuS, 0);
      const peaks = memory.get(store)!;
      options.log(`bench: media store step (checking the ${store} store)`);
      step.variants.push({
        store,
        location: store === 's3' ? `s3://${bucket}/${prefix}` : 'MEDIA_DIR',
        rounds: storeRounds,
        workerCpuMsPerChild: children > 0 ? round((cpuS * 1000) / children, 1) : null,
        storeServerCpuMsPerChild: store === 's3' && children > 0 && s3Pid !== undefined ? round((s3ServerCpuS * 1000) / children, 1) : null,
        idleRssMB: megabytes(peaks.idle),
        photosPeakRssMB: megabytes(peaks.photos),
        peakRssMB: megabytes(peaks.videos),
        peakRssFrom: peaks.from,
        floor: floors.get(store)!,
        check: await checkStore(app, store === 's3' ? s3 : null, largeBytes),
      });
    }
  } finally {
    active = false;
    delete stack.watched[s3Process];
    for (const app of apps.values()) await app.stop();
    await s3.stop();
    await fs.promises.rm(root, { recursive: true, force: true });
  }

  const [directory, onS3] = stores.map((store) => step.variants.find((variant) => variant.store === store));
  const withServer =
    onS3?.workerCpuMsPerChild != null && onS3.storeServerCpuMsPerChild !== null
      ? onS3.workerCpuMsPerChild + onS3.storeServerCpuMsPerChild
      : null;
  step.ratios = {
    workerCpuPerChild: ratio(onS3?.workerCpuMsPerChild ?? null, directory?.workerCpuMsPerChild ?? null),
    workerPeakRss: ratio(onS3?.peakRssMB ?? null, directory?.peakRssMB ?? null),
    cpuPerChildWithStoreServer: ratio(withServer, directory?.workerCpuMsPerChild ?? null),
  };
  const spreads = step.variants.map((variant) => {
    const values = variant.rounds
      .filter((run) => run.videos)
      .map((run) => run.workerCpuMsPerChild)
      .filter((value): value is number => value !== null);
    return values.length > 1 ? Math.max(...values) - Math.min(...values) : null;
  });
  const known = spreads.filter((spread): spread is number => spread !== null);
  step.noiseCpuMsPerChild = known.length > 0 && known.length === spreads.length ? round(Math.max(...known), 1) : null;
  step.ok = step.variants.length === stores.length && step.variants.every((variant) => variant.check.ok);
  return step;
}
