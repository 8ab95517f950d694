import crypto from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileContent } from '../harness/events.js';
import { LoadGenerator } from '../harness/load.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';
import { fillExpiredAlbums, workspaceLeftovers, type ExpiredAlbums } from '../harness/expired-albums.js';
import { unique } from '../harness/random.js';
import { openMediaStore, type MediaStore } from '../../src/media/store.js';
import { checkInvariants, isQuiet, type CheckReport } from './invariants.js';
import { environmentEndpointId } from '../../src/db/endpoints.js';
import {
  addOutageEndpoints,
  checkAlbumsNotHeld,
  checkDeliveries,
  endpointsToken,
  leaseHolderPid,
  type OutageEndpoints,
} from './receiver-outage.js';
import { checkErasures, eraseUnderLoad, type ErasuresUnderLoad } from './erasures-under-load.js';
import { formatTable, megabytes, seconds, waitFor } from './report.js';

interface Fault {
  name: string;
  at: number;
  /** When the broken part served again. */
  recoveredAt: number;
  note: string;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await pause(25);
  }
  return true;
}

/** Shortened from §16's three days, so that the outage's notifications are still pending when it ends. */
const deliverySchedule = '0s,1s,2s,4s,8s,15s,15s,15s,15s,15s,15s,15s';
const deliveryConcurrency = 4;
const receiverOutageMs = 40_000;

describe('fault suite: two ingresses and two workers under signed load while their dependencies and receivers break', () => {
  let stack: ProcessStack;
  let load: LoadGenerator;
  let botApi: FakeBotApi;
  let store: MediaStore;
  let expired: ExpiredAlbums;
  let endpoints: OutageEndpoints;
  const faults: Fault[] = [];
  let startedAt = 0;
  const bot = { id: '7000000042', token: `7000000042:AAH${crypto.randomBytes(16).toString('hex')}`, secretToken: 'faults-telegram-secret' };

  beforeAll(async () => {
    botApi = await startFakeBotApi();
    botApi.addBot(bot.token);
    stack = await startProcessStack({
      ingresses: 2,
      workers: 2,
      media: { bytes: 96 * 1024, durationMs: () => 400 + Math.random() * 1_200 },
      notifyDelayMs: () => 150 + Math.random() * 500,
      env: (workspace) => ({
        // Retention runs through the load and every fault, purging the expired workspace filled below.
        RETENTION_INTERVAL_S: '2',
        // A workspace token adds two endpoints of its own beside NOTIFY_URL's, on the loopback address.
        API_TOKENS: JSON.stringify({ [endpointsToken]: [workspace] }),
        NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true',
        DELIVERY_SCHEDULE: deliverySchedule,
        DELIVERY_CONCURRENCY: String(deliveryConcurrency),
        TELEGRAM_API_ROOT: botApi.url,
        TELEGRAM_BOTS: JSON.stringify({ [workspace]: { faults: { token: bot.token, secretToken: bot.secretToken } } }),
      }),
    });
    endpoints = await addOutageEndpoints(stack);
    store = openMediaStore({ dir: path.join(stack.dir, 'media'), store: undefined });
    expired = await fillExpiredAlbums(stack.pool, store, { workspace: unique('ws-expired'), albums: 2_000, files: 100 });
    load = new LoadGenerator({
      workspace: stack.workspace,
      secret: stack.secret,
      targets: stack.ingressUrls,
      mediaUrl: (path) => stack.media.url(path),
      albumsPerSecond: 3,
      maxInFlight: 24,
      telegram: {
        bot: 'faults',
        botId: bot.id,
        secretToken: bot.secretToken,
        share: 0.3,
        serveFile: (fileId) => botApi.addFile(bot.token, fileId, { content: fileContent(fileId) }),
      },
    });
  }, 300_000);

  afterAll(async () => {
    load?.stop();
    store?.close();
    await stack?.teardown();
    await endpoints?.close();
    await botApi?.close();
  }, 120_000);

  async function inject(name: string, breakAndRepair: () => Promise<string>): Promise<void> {
    load.phase = name;
    const at = Date.now();
    const note = await breakAndRepair();
    faults.push({ name, at, recoveredAt: Date.now(), note });
    await pause(3_000);
  }

  it('keeps every acknowledged child (UnifyPort and Telegram), decides it, notifies album.ready once and downloads each file once', async () => {
    startedAt = Date.now();
    stack.memory.start(1_000);
    load.start();
    await pause(8_000);

    for (const [round, ingress] of [stack.ingresses[0]!, stack.ingresses[1]!, stack.ingresses[0]!].entries()) {
      await inject(`kill -9 ${ingress.name} (${round + 1} of 3)`, async () => {
        await ingress.kill9();
        await pause(1_000);
        await ingress.start();
        return 'restarted';
      });
    }

    await inject('kill -9 worker-1 mid-download', async () => {
      const worker = stack.workers[0]!;
      if (!(await until(() => stack.media.inFlight() > 0, 20_000))) return 'no download was in flight';
      const killedAt = Date.now();
      await worker.kill9();
      await pause(200);
      const cut = stack.media.fetches.filter((f) => f.completedAt === null && f.startedAt < killedAt).length;
      await worker.start();
      return `${cut} download(s) cut`;
    });

    await inject('kill -9 both workers mid-decision', async () => {
      if (!(await until(() => stack.receiver.inFlight() > 0, 20_000))) return 'no notification was in flight';
      const inFlight = stack.receiver.inFlight();
      await Promise.all(stack.workers.map((worker) => worker.kill9()));
      await pause(1_000);
      await Promise.all(stack.workers.map((worker) => worker.start()));
      return `${inFlight} notification(s) in flight`;
    });

    await inject(`${stack.temporalName} stopped for 10 s`, async () => {
      await stack.stopTemporal();
      await pause(10_000);
      await stack.startTemporal();
      return 'restarted on the same port and state';
    });

    await inject('PostgreSQL stopped for 5 s (fast shutdown)', async () => {
      const from = load.attempts.length;
      await stack.postgres.stop();
      await pause(5_000);
      await stack.postgres.start();
      await pause(2_000);
      const answers = load.attempts.slice(from);
      return `${answers.filter((a) => a.status === 503).length} answered 503`;
    });

    let erasures: ErasuresUnderLoad = { erased: [], inFlightAtErasure: 0 };
    await inject('erasures with their downloads in flight: two conversations, an album, one message of an album', async () => {
      erasures = await eraseUnderLoad(stack);
      const rows = erasures.erased.map((e) => `${e.what}: ${e.counts.messages ?? 0} messages, ${e.counts.mediaObjects ?? 0} files`);
      return `${erasures.inFlightAtErasure} downloads in flight; ${rows.join('; ')}`;
    });

    let outage = { from: 0, to: 0 };
    await inject(
      `receivers down for ${seconds(receiverOutageMs)}: NOTIFY_URL answers 503 (1 in 5 hangs past the 15 s timeout), "gone" 410`,
      async () => {
        let answered = 0;
        let hung = 0;
        outage = { from: Date.now(), to: 0 };
        stack.receiver.outage(() => {
          if (Math.random() < 0.2) {
            hung += 1;
            return { status: 503, hang: true };
          }
          answered += 1;
          return { status: 503 };
        });
        endpoints.goneNow();
        const steadyBefore = endpoints.receiver.received('steady').length;
        await pause(receiverOutageMs);
        stack.receiver.recover();
        outage.to = Date.now();
        const steady = endpoints.receiver.received('steady').length - steadyBefore;
        return `${answered} answered 503, ${hung} hung; "steady" took ${steady} meanwhile`;
      },
    );

    await inject('kill -9 the worker sending the backlog, mid-delivery', async () => {
      if (!(await until(() => stack.receiver.inFlight() > 0, 20_000))) return 'no notification was in flight';
      const pid = await leaseHolderPid(stack.pool, environmentEndpointId);
      const worker = stack.workers.find((candidate) => candidate.pid === pid);
      if (!worker) return 'no worker held the NOTIFY_URL endpoint';
      const inFlight = stack.receiver.inFlight();
      await worker.kill9();
      await pause(1_000);
      await worker.start();
      return `${inFlight} in flight from ${worker.name}`;
    });

    load.phase = 'cool-down and redeliveries';
    await pause(5_000);
    load.stopGenerating();
    await load.drain(180_000);
    const quiet = await waitFor(async () => isQuiet(stack.pool, load), 360_000, 2_000);
    stack.memory.stop();
    const report: CheckReport = await checkInvariants({ stack, load, botApi });
    const deliveries = await checkDeliveries({
      pool: stack.pool,
      environment: stack.receiver.requests(),
      endpoints,
      concurrency: deliveryConcurrency,
    });
    // Without a receiver to wait on, an album closes its late window after its last decision, its downloads settled.
    const held = await checkAlbumsNotHeld({ pool: stack.pool, temporalAddress: stack.temporalAddress, outage, closeWithinMs: 25_000 });
    const erased = await checkErasures({
      pool: stack.pool,
      mediaDir: path.join(stack.dir, 'media'),
      erasures,
      received: [...stack.receiver.requests(), ...endpoints.receiver.received()],
    });
    const expiredLeft = await workspaceLeftovers(stack.pool, expired.workspace);
    const expiredFilesLeft = (await Promise.all(expired.shas.map((sha) => store.stat(sha)))).filter((info) => info !== null).length;
    const elapsed = Date.now() - startedAt;

    const phases = ['warm-up', ...faults.map((f) => f.name), 'cool-down and redeliveries'];
    const rows = phases.map((phase) => {
      const fault = faults.find((f) => f.name === phase);
      const attempts = load.attempts.filter((a) => a.phase === phase);
      const acknowledgedChildren = [...load.children.values()].filter((c) => c.ackedIn === phase);
      const violations = report.violations.filter((v) => v.phase === phase).length;
      return [
        phase,
        fault ? `t+${seconds(fault.at - startedAt)}` : '',
        fault ? seconds(fault.recoveredAt - fault.at) : '',
        String(attempts.length),
        String(attempts.filter((a) => a.acknowledged).length),
        String(attempts.filter((a) => !a.acknowledged).length),
        `${acknowledgedChildren.filter((c) => report.checked.has(c.childKey)).length}/${acknowledgedChildren.length}`,
        violations === 0 ? 'ok' : `${violations} violation(s)`,
        fault?.note ?? '',
      ];
    });
    const finalViolations = report.violations.filter((v) => v.phase === 'final').length;
    const acknowledged = [...load.children.values()].filter((c) => c.acked).length;
    const telegramChildren = [...load.children.values()].filter((c) => c.telegramFileId !== null);
    rows.push([
      'all (final checks)',
      `t+${seconds(elapsed)}`,
      '',
      String(load.attempts.length),
      String(load.attempts.filter((a) => a.acknowledged).length),
      String(load.attempts.filter((a) => !a.acknowledged).length),
      `${report.checked.size}/${acknowledged}`,
      finalViolations === 0 ? 'ok' : `${finalViolations} violation(s)`,
      quiet.done ? 'quiet' : `not quiet: ${quiet.detail}`,
    ]);
    console.log(
      [
        '',
        'albumflow fault suite',
        formatTable(
          ['fault injected', 'when', 'outage', 'requests', 'acked', 'refused/failed', 'children checked', 'result', 'note'],
          rows,
        ),
        '',
        `children sent ${load.children.size}, acknowledged ${acknowledged}, checked ${report.checked.size}; albums ${report.albums}, ` +
          `decisions ${report.decisions}, files downloaded ${report.downloads} (${report.interruptedFetches} fetches cut by kills), ` +
          `notifications ${stack.receiver.deliveries().length} (${report.notificationRedeliveries} same-id redeliveries)`,
        `of them Telegram: children ${telegramChildren.length} (checked ${telegramChildren.filter((c) => report.checked.has(c.childKey)).length}), ` +
          `caption edits ${telegramChildren.filter((c) => c.editedCaption !== null).length}, getFile calls ${botApi.calls('getFile').length}`,
        `peak memory: ingress ${megabytes(stack.peakMemory('ingress'))}, worker ${megabytes(stack.peakMemory('worker'))}; ` +
          `unexpected process exits ${[...stack.ingresses, ...stack.workers].reduce((n, p) => n + p.unexpectedExits, 0)}`,
        `receivers: ${deliveries.endpoints
          .map(
            (e) =>
              `${e.name} ${e.delivered}/${e.recorded} delivered${e.held ? `, ${e.held} held` : ''}${e.lastAcceptedAt ? `, the last ${seconds(e.lastAcceptedAt - outage.to)} after the outage` : ''}`,
          )
          .join('; ')}; "gone" answered 410 ${deliveries.goneAnswers} time(s)`,
        `albums decided during the receivers' outage ${held.decided}, closed before it ended ${held.closedDuringOutage}, ` +
          `slowest close after its last decision ${seconds(held.slowestCloseMs)}`,
        ...deliveries.violations.slice(0, 20).map((v) => `  [delivery] ${v}`),
        ...held.violations.slice(0, 20).map((v) => `  [albums held] ${v}`),
        `erasures: ${erasures.erased.length} done, ${erased.collectedAfterErasure} erased files written after their erasure and collected, ` +
          `${erased.objects} objects in the store checked for a reference, ` +
          `${erased.checkedRequests} requests taken after an erasure checked for its content`,
        ...erased.violations.slice(0, 20).map((v) => `  [erasure] ${v}`),
        `retention through the load: the expired workspace's rows left ${JSON.stringify(expiredLeft)}, files left ${expiredFilesLeft} of ${expired.shas.length}`,
        ...report.violations.slice(0, 40).map((v) => `  [${v.phase}] ${v.message}`),
        '',
      ].join('\n'),
    );

    expect(quiet.done, `never quiet: ${quiet.detail}`).toBe(true);
    expect(report.violations).toEqual([]);
    expect(deliveries.violations).toEqual([]);
    expect(held.violations).toEqual([]);
    expect(erased.violations).toEqual([]);
    expect(erasures.erased.map((e) => e.what)).toHaveLength(4);
    expect(erasures.inFlightAtErasure).toBeGreaterThan(0);
    expect(erased.checkedRequests).toBeGreaterThan(0);
    expect(held.decided).toBeGreaterThan(0);
    expect(held.closedDuringOutage).toBeGreaterThan(0);
    expect(faults.find((f) => f.name.startsWith('kill -9 the worker sending'))?.note).toMatch(/in flight from worker-/);
    expect(load.unacknowledged()).toBe(0);
    expect(report.checked.size).toBe(acknowledged);
    expect(acknowledged).toBe(load.children.size);
    expect(telegramChildren.length).toBeGreaterThan(0);
    expect(expiredLeft).toEqual({});
    expect(expiredFilesLeft).toBe(0);
    expect(faults.find((f) => f.name.startsWith('PostgreSQL'))?.note).not.toMatch(/^0 answered/);
    expect([...stack.ingresses, ...stack.workers].map((p) => [p.name, p.unexpectedExits])).toEqual(
      [...stack.ingresses, ...stack.workers].map((p) => [p.name, 0]),
    );
  });
});
