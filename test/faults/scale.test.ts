import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoadGenerator } from '../harness/load.js';
import { decisions, outbox } from '../harness/rows.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';
import { checkInvariants, isQuiet } from './invariants.js';
import { formatTable, megabytes, seconds, waitFor } from './report.js';

const bigAlbumSize = 10_000;
const albumsAtOnce = 10_000;
/** Resident memory no albumflow process may exceed while it takes these loads. */
const memoryLimitBytes = { ingress: 512 * 1024 * 1024, worker: 1536 * 1024 * 1024 };

const rows: string[][] = [];

afterAll(() => {
  if (rows.length === 0) return;
  const header = ['case', 'children sent', '202', 'children checked', 'took', 'peak ingress', 'peak worker', 'result'];
  console.log(['', 'albumflow scale checks', formatTable(header, rows), ''].join('\n'));
});

/** A stack of two ingresses and two workers with its memory watched, for one describe block. */
function useStack(env: Record<string, string> = {}) {
  const context = {} as { stack: ProcessStack; load: () => LoadGenerator };
  beforeAll(async () => {
    context.stack = await startProcessStack({
      ingresses: 2,
      workers: 2,
      env,
      media: { bytes: 2 * 1024, durationMs: () => 0 },
      notifyDelayMs: () => 0,
    });
    context.stack.memory.start(1_000);
    context.load = () =>
      new LoadGenerator({
        workspace: context.stack.workspace,
        secret: context.stack.secret,
        targets: context.stack.ingressUrls,
        mediaUrl: (path) => context.stack.media.url(path),
        albumsPerSecond: 0,
        maxInFlight: 48,
      });
  }, 300_000);
  afterAll(async () => {
    await context.stack?.teardown();
  }, 120_000);
  return context;
}

describe(`${albumsAtOnce.toLocaleString('en')} albums at once`, () => {
  const context = useStack();

  it('stores every acknowledged child with bounded memory, keeps dispatching to Temporal and keeps serving', async () => {
    const { stack } = context;
    const startedAt = Date.now();
    const load = context.load();
    load.phase = 'albums at once';
    for (let i = 0; i < albumsAtOnce; i++)
      load.addAlbum({ size: 1, standalone: false, withTotal: true, spreadMs: 2_000, redeliveryRate: 0 });
    load.start();
    load.stopGenerating();
    await load.drain(300_000);
    const acceptedIn = Date.now() - startedAt;
    const report = await checkInvariants({ stack, load });
    const notStored = report.violations.filter((v) => v.message.endsWith('acknowledged with 202 but not stored'));
    const outboxDepth = () => outbox.count(stack.pool, {});
    const depthBefore = await outboxDepth();
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    const depthAfter = await outboxDepth();
    const ready = await fetch(`${stack.ingressUrls[0]}/readyz`);
    const acknowledged = [...load.children.values()].filter((c) => c.acked).length;
    const statuses = [...new Set(load.attempts.map((a) => a.status))].sort();
    stack.memory.stop();
    rows.push([
      `${albumsAtOnce} albums at once`,
      String(load.children.size),
      String(acknowledged),
      `${acknowledged - notStored.length}/${acknowledged} stored`,
      `${seconds(acceptedIn)} to accept`,
      megabytes(stack.peakMemory('ingress')),
      megabytes(stack.peakMemory('worker')),
      `answers ${statuses.join(', ')}; outbox ${depthBefore} → ${depthAfter} in 30 s`,
    ]);

    expect(acknowledged).toBe(albumsAtOnce);
    expect(notStored).toEqual([]);
    expect(statuses.filter((status) => status !== 202 && status !== 503)).toEqual([]);
    expect(depthAfter === 0 || depthAfter < depthBefore).toBe(true);
    expect(ready.status).toBe(200);
    expect(stack.peakMemory('ingress')).toBeLessThan(memoryLimitBytes.ingress);
    expect(stack.peakMemory('worker')).toBeLessThan(memoryLimitBytes.worker);
    expect([...stack.ingresses, ...stack.workers].map((p) => p.unexpectedExits)).toEqual([0, 0, 0, 0]);
  });
});

describe(`one album of ${bigAlbumSize.toLocaleString('en')} children`, () => {
  const context = useStack({ QUIET_PERIOD_MS: '2000', MAX_WAIT_MS: '10000' });

  it('decides it with every child, notifies album.ready once and downloads each of its 1,000 files once', async () => {
    const { stack } = context;
    const startedAt = Date.now();
    const load = context.load();
    load.phase = 'big album';
    load.addAlbum({ size: bigAlbumSize, standalone: false, withTotal: true, spreadMs: 20_000, redeliveryRate: 0.02, mediaEvery: 10 });
    load.start();
    load.stopGenerating();
    await load.drain(300_000);
    const quiet = await waitFor(async () => isQuiet(stack.pool, load), 360_000, 2_000);
    const report = await checkInvariants({ stack, load });
    const acknowledged = [...load.children.values()].filter((c) => c.acked).length;
    stack.memory.stop();
    rows.push([
      `one album of ${bigAlbumSize} children`,
      String(load.children.size),
      String(acknowledged),
      `${report.checked.size}/${acknowledged}`,
      seconds(Date.now() - startedAt),
      megabytes(stack.peakMemory('ingress')),
      megabytes(stack.peakMemory('worker')),
      quiet.done && report.violations.length === 0 ? 'ok' : `${report.violations.length} violation(s); ${quiet.detail}`,
    ]);

    expect(quiet.done, quiet.detail).toBe(true);
    expect(report.violations.slice(0, 10)).toEqual([]);
    expect(report.checked.size).toBe(bigAlbumSize);
    const albumKey = [...load.children.values()][0]!.albumKey!;
    const recorded = await decisions.read(stack.pool, { workflowId: `album:${albumKey}` }, ['children']);
    expect(recorded.at(-1)?.children).toBe(bigAlbumSize);
    expect(stack.peakMemory('ingress')).toBeLessThan(memoryLimitBytes.ingress);
    expect(stack.peakMemory('worker')).toBeLessThan(memoryLimitBytes.worker);
  });
});
