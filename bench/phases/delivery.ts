// Outbound delivery (src/delivery/) on a database of the phase's own: the delivery engine runs in a process
// of its own (test/harness/delivery-engine.ts) and sends notifications recorded as the album workflow records
// them (src/delivery/notification.ts, src/db/deliveries.ts) to a receiver in the bench's own process
// (test/harness/servers/webhook-receiver.ts: it verifies every request with standardwebhooks; its CPU is not
// counted). Throughput: the notifications of many albums to one endpoint at the highest rate limit, against
// the ceiling (bench/delivery-ceiling.ts), which signs the same bodies and POSTs them to the same receiver
// with the same concurrency. Drain: another endpoint answers 503 while a backlog is recorded, then recovers;
// its drain is held to its rate limit. Both check that every notification arrived, in order per album.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyRing, parseKeys } from '../../src/common/secret-key.js';
import {
  deliveriesChannel,
  leaseEndpoints,
  recordNotification,
  releaseEndpoint,
  type NotificationToRecord,
} from '../../src/db/deliveries.js';
import { connectionUrl, createPool, type Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { endpointGuard } from '../../src/delivery/engine.js';
import { addEndpoint, maxRateLimit, type EndpointDeps } from '../../src/delivery/endpoints.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { notificationOf } from '../../src/delivery/notification.js';
import { webhookBody, webhookId } from '../../src/delivery/wire.js';
import { buildAlbumView, type ChildWithOutcomes } from '../../src/domain/album-view.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey, AttachmentView, DecisionView } from '../../src/domain/types.js';
import { deliveryEngineProcess, mediaLinks } from '../../test/harness/delivery-engine.js';
import { harnessSecretKey, userEnvironment } from '../../test/harness/environment.js';
import { cpuSeconds, NodeProcess, postgresCpuSeconds } from '../../test/harness/processes.js';
import { seededRandom } from '../../test/harness/random.js';
import { startWebhookReceiver, type Answer, type ReceivedWebhook } from '../../test/harness/servers/webhook-receiver.js';
import type { NotifyInput } from '../../workflows/activity-types.js';
import { deliveryCeilingReadyLine, type CeilingMessage, type CeilingReply, type CeilingRequest } from '../delivery-ceiling.js';
import { deliveryCheck, ratio, round, type Arrival, type DeliveryStep, type SentNotification } from '../report.js';
import { ask, type PhaseContext } from './context.js';

/** Each album is notified three times, as the album workflow notifies it: album.ready, its media settled, a late photo. */
const notificationsPerAlbum = 3;

/**
 * How far the drain's pace may be measured above the rate limit: the engine paces the starts of its attempts,
 * and the first start of a lane's turn (every 10 s, src/delivery/engine.ts) may come a few ms early.
 */
const rateLimitSlack = 0.01;

/** The bench's name as the holder of an endpoint's lease. */
const benchHolder = 'albumflow-bench';

interface PhaseNotification extends SentNotification {
  record: NotificationToRecord;
}

/** A photo as a notification shows it, with its one attachment. */
function photo(albumId: string, n: number, receivedAt: string, attachment: AttachmentView): ChildWithOutcomes {
  return {
    messageId: `${albumId}_m${n}`,
    index: n,
    total: null,
    metadataInvalid: false,
    albumMeta: { index: n },
    caption: n === 1 ? `album ${albumId}` : null,
    sentAt: receivedAt,
    receivedAt,
    history: [],
    attachments: [attachment],
  };
}

const pending: AttachmentView = { position: 0, status: 'pending', contentType: null, bytes: null, sha256: null, error: null };

function downloaded(random: () => number): AttachmentView {
  const sha256 = Array.from({ length: 8 }, () =>
    Math.floor(random() * 2 ** 32)
      .toString(16)
      .padStart(8, '0'),
  ).join('');
  return {
    position: 0,
    status: 'downloaded',
    contentType: 'image/jpeg',
    bytes: 120_000 + Math.floor(random() * 2_000_000),
    sha256,
    error: null,
  };
}

/**
 * The notifications of `albums` albums of 1–10 photos (seeded), each album's album.ready (its photos pending),
 * album.media_settled (downloaded) and album.updated (a late photo), ordered by their place in their album
 * (every album.ready first), as the workflows would record them.
 */
async function albumNotifications(pool: Pool, workspace: string, albums: number, seed: number): Promise<PhaseNotification[]> {
  const random = seededRandom(seed);
  const at = new Date().toISOString();
  const notifications: PhaseNotification[] = [];
  for (let a = 0; a < albums; a++) {
    const key: AlbumKey = { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: `conv_${a % 50}`, albumId: `alb_${a}` };
    const workflowId = albumWorkflowId(key);
    const photos = 1 + Math.floor(random() * 10);
    const settled = Array.from({ length: photos + 1 }, (_, i) => photo(key.albumId, i + 1, at, downloaded(random)));
    const arrived = settled.slice(0, photos).map((child) => ({ ...child, attachments: [pending] }));
    const decided: DecisionView = { seq: 1, trigger: 'quiet_period', childMessageIds: arrived.map((c) => c.messageId), decidedAt: at };
    const late: DecisionView = { seq: 2, trigger: 'late_item', childMessageIds: [settled.at(-1)!.messageId], decidedAt: at };
    const view = (children: ChildWithOutcomes[], decisions: DecisionView[]) =>
      buildAlbumView({ workflowId, key, children, decisions, reviewReasons: [], reviewResolved: null, closed: false, childOrder: 'index' });
    const inputs: NotifyInput[] = [
      { workflowId, seq: 1, type: 'album.ready', decision: decided, album: view(arrived, [decided]) },
      { workflowId, seq: 1, type: 'album.media_settled', notice: 1, decision: decided, album: view(settled.slice(0, photos), [decided]) },
      { workflowId, seq: 2, type: 'album.updated', decision: late, album: view(settled, [decided, late]) },
    ];
    // Stored, as the workflows' albums are: a notification is recorded only while its album is.
    await pool.query(
      `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (workflow_id) DO NOTHING`,
      [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId, workflowId],
    );
    for (const [index, input] of inputs.entries()) {
      const record = await notificationOf(pool, input, new Date());
      notifications.push({ webhookId: webhookId(record.id), album: workflowId, index, record });
    }
  }
  return notifications.sort((a, b) => a.index - b.index);
}

/** A receiver endpoint's answers: 204, or 503 while `down()`; what it answered, in order, and when it last delivered. */
function answers(down: () => boolean = () => false) {
  const arrivals: Arrival[] = [];
  let lastDeliveredAt = 0;
  return {
    arrivals,
    lastDeliveredAt: () => lastDeliveredAt,
    answer: (request: ReceivedWebhook): Answer => {
      const delivered = !down();
      arrivals.push({ webhookId: request.webhookId, delivered });
      if (delivered) lastDeliveredAt = request.receivedAt;
      return { status: delivered ? 204 : 503 };
    },
  };
}

/** Waits until every delivery to the endpoint is delivered (or the settle timeout passed). */
async function waitDelivered(ctx: PhaseContext, pool: Pool, endpointId: string): Promise<void> {
  const deadline = Date.now() + ctx.options.settleTimeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ left: number }>(
      `SELECT count(*)::int AS left FROM deliveries WHERE endpoint_id = $1 AND state <> 'delivered'`,
      [endpointId],
    );
    if (rows[0]!.left === 0) return;
    if (Date.now() > deadline) {
      ctx.options.log(`bench: delivery: ${rows[0]!.left} deliveries not delivered after ${ctx.options.settleTimeoutMs} ms`);
      return;
    }
    await sleep(50, undefined, { signal: ctx.options.signal });
  }
}

/** The schedule of the drain's engine: a retry within 2 s all through the outage, and some to spare. */
function drainSchedule(outageSeconds: number): string {
  return ['0s', '1s', ...Array.from({ length: Math.ceil(outageSeconds / 2) + 5 }, () => '2s')].join(',');
}

export async function runDelivery(ctx: PhaseContext): Promise<DeliveryStep | null> {
  if (!ctx.runs('delivery')) return null;
  const { options, stack } = ctx;
  options.signal?.throwIfAborted();
  options.log('bench: delivery (a database, a receiver, the delivery engine and its ceiling of its own)');
  const db = await stack.database('delivery');
  const pool = createPool(db, { max: 4, applicationName: 'albumflow-bench' });
  const receiver = await startWebhookReceiver();
  const started: NodeProcess[] = [];
  const bodiesFile = path.join(stack.runDir, 'delivery-bodies.json');
  const launch = async (child: NodeProcess) => {
    started.push(child);
    await child.start();
    stack.watched[child.name] = child.pid!;
    return child;
  };
  const deps: EndpointDeps = {
    keys: new KeyRing(parseKeys(harnessSecretKey, 'the harness key')),
    guard: endpointGuard({ allowPrivateNetworks: true }),
  };
  const concurrency = options.deliveryConcurrency;
  const schedule = drainSchedule(options.deliveryOutageSeconds);
  const cpuOf = (child: NodeProcess) => cpuSeconds(child.pid!) ?? 0;
  const { profileArgs } = stack;
  try {
    // Throughput: the notifications are recorded before the engine starts, and the bench holds the endpoint's
    // lease (as another sender would) until the engine's step begins.
    const engineAnswers = answers();
    const ceilingAnswers = answers();
    const added = await addEndpoint(pool, deps, 'throughput', {
      url: receiver.endpoint('engine', [], engineAnswers.answer),
      rateLimit: maxRateLimit,
    });
    receiver.setSecrets('engine', [added.secret]);
    const ceilingUrl = receiver.endpoint('ceiling', [added.secret], ceilingAnswers.answer);
    const albums = Math.max(1, Math.round(options.deliveryNotifications / notificationsPerAlbum));
    const sent = await albumNotifications(pool, 'throughput', albums, options.seed + 600);
    for (let i = 0; i < sent.length; i += 100) {
      await withTransaction(pool, async (client) => {
        for (const n of sent.slice(i, i + 100)) await recordNotification(client, n.record);
      });
    }
    // The planner's statistics are current, as autovacuum keeps them on a database in use (the plans of the
    // engine's queries follow them).
    await pool.query('ANALYZE deliveries');
    const held = await leaseEndpoints(pool, { holder: benchHolder, leaseMs: 3_600_000, limit: 1, busy: [] });
    if (held[0]?.id !== added.endpoint.id) throw new Error('delivery: the bench could not hold the endpoint it sends to');
    // The ceiling's bodies: the engine's, with the media links it mints at each attempt.
    const materialize = withMediaLinks(mediaLinks);
    const bodies: CeilingRequest[] = await Promise.all(
      sent.map(async ({ record }) => ({
        webhookId: webhookId(record.id),
        body: webhookBody({
          notificationId: record.id,
          type: record.type,
          recordedAt: record.recordedAt,
          data: await materialize(record.data, { workspace: record.workspace, type: record.type }),
        }),
      })),
    );
    fs.writeFileSync(bodiesFile, JSON.stringify(bodies));

    const inherited = userEnvironment();
    const [ceiling, engine] = await Promise.all([
      launch(
        new NodeProcess({
          name: 'delivery ceiling',
          script: 'bench/delivery-ceiling.ts',
          env: {
            ...inherited,
            DELIVERY_CEILING_BODIES: bodiesFile,
            DELIVERY_CEILING_URL: ceilingUrl,
            DELIVERY_CEILING_SECRET: added.secret,
            DELIVERY_CEILING_CONCURRENCY: String(concurrency),
          },
          ready: new RegExp(deliveryCeilingReadyLine),
          nodeArgs: profileArgs('delivery-ceiling'),
          logFile: path.join(stack.runDir, 'delivery-ceiling.log'),
          ipc: true,
          detached: true,
        }),
      ),
      launch(
        deliveryEngineProcess({
          name: 'delivery engine',
          env: {
            ...inherited,
            NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true',
            DELIVERY_SCHEDULE: schedule,
            DELIVERY_CONCURRENCY: String(concurrency),
          },
          databaseUrl: connectionUrl(db),
          secretKey: harnessSecretKey,
          nodeArgs: profileArgs('delivery-engine'),
          logFile: path.join(stack.runDir, 'delivery-engine.log'),
          detached: true,
        }),
      ),
    ]);

    /** One sender's step: its CPU (and PostgreSQL's) over `work`, and its rate from the start to the receiver's last 2xx. */
    const measure = async (name: string, sender: NodeProcess, lastDeliveredAt: () => number, work: () => Promise<void>) => {
      const before = { sender: cpuOf(sender), postgres: postgresCpuSeconds() };
      const startedAt = Date.now();
      await ctx.measureCpu(name, work);
      const perNotification = (seconds: number) => (sent.length > 0 ? round((seconds * 1000) / sent.length, 3) : null);
      const durationS = Math.max(0, lastDeliveredAt() - startedAt) / 1000;
      return {
        durationS: round(durationS, 2),
        perS: durationS > 0 ? round(sent.length / durationS, 1) : null,
        cpuMsPerNotification: perNotification(cpuOf(sender) - before.sender),
        postgresCpuMsPerNotification: perNotification(postgresCpuSeconds() - before.postgres),
      };
    };

    options.log(`bench: delivery throughput: ${sent.length} notifications, ${concurrency} in flight (ceiling)`);
    const ceilingFigures = await measure('delivery throughput, ceiling', ceiling, ceilingAnswers.lastDeliveredAt, async () => {
      const reply = await ask<CeilingReply>(ceiling, { type: 'run' } satisfies CeilingMessage, options.signal);
      if (reply.type === 'error') throw new Error(`delivery ceiling: ${reply.message}`);
    });
    options.log(`bench: delivery throughput: ${sent.length} notifications, ${concurrency} in flight (the delivery engine)`);
    const engineFigures = await measure('delivery throughput, engine', engine, engineAnswers.lastDeliveredAt, async () => {
      await releaseEndpoint(pool, added.endpoint.id, benchHolder);
      await pool.query('SELECT pg_notify($1, $2)', [deliveriesChannel, '']);
      await waitDelivered(ctx, pool, added.endpoint.id);
    });
    const throughputUnverified = receiver.unverified();
    const { postgresCpuMsPerNotification: _ceilingPostgres, ...ceilingSender } = ceilingFigures;

    // Drain: the endpoint answers 503 while the backlog is recorded, spread over the outage; then it recovers.
    // The statistics are those of a database in use before the outage: its deliveries delivered.
    await pool.query('ANALYZE deliveries');
    let down = true;
    const outageAnswers = answers(() => down);
    const drained = await addEndpoint(pool, deps, 'drain', {
      url: receiver.endpoint('outage', [], outageAnswers.answer),
      rateLimit: options.deliveryRateLimit,
    });
    receiver.setSecrets('outage', [drained.secret]);
    const backlogAlbums = Math.max(1, Math.round(options.deliveryBacklog / notificationsPerAlbum));
    const backlog = await albumNotifications(pool, 'drain', backlogAlbums, options.seed + 700);
    const outageMs = options.deliveryOutageSeconds * 1000;
    options.log(
      `bench: delivery drain: ${backlog.length} notifications recorded over a ${options.deliveryOutageSeconds} s outage (503), ` +
        `rate limit ${options.deliveryRateLimit}/s`,
    );
    const outageStart = Date.now();
    for (const [i, n] of backlog.entries()) {
      const due = outageStart + (i / backlog.length) * outageMs;
      if (due > Date.now()) await sleep(due - Date.now(), undefined, { signal: options.signal });
      await recordNotification(pool, n.record);
    }
    if (outageStart + outageMs > Date.now()) await sleep(outageStart + outageMs - Date.now(), undefined, { signal: options.signal });
    down = false;
    const recoveredAt = Date.now();
    await waitDelivered(ctx, pool, drained.endpoint.id);

    const { rows: attempts } = await pool.query<{ at: Date; status_code: number | null }>(
      `SELECT a.at, a.status_code FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
        WHERE d.endpoint_id = $1 ORDER BY a.at`,
      [drained.endpoint.id],
    );
    const { rows: deliveries } = await pool.query<{ delivered_at: Date | null }>(
      `SELECT delivered_at FROM deliveries WHERE endpoint_id = $1`,
      [drained.endpoint.id],
    );
    const succeeded = (status: number | null) => status !== null && status >= 200 && status < 300;
    const afterRecovery = attempts.filter((attempt) => attempt.at.getTime() >= recoveredAt);
    const firstDelivered = attempts.find((attempt) => succeeded(attempt.status_code));
    const lastDeliveredAt = Math.max(...deliveries.map((d) => d.delivered_at?.getTime() ?? 0));
    const backlogAtRecovery = deliveries.filter((d) => d.delivered_at === null || d.delivered_at.getTime() >= recoveredAt).length;
    const drainS = lastDeliveredAt >= recoveredAt ? (lastDeliveredAt - recoveredAt) / 1000 : null;
    const paceSpanS = afterRecovery.length > 1 ? (afterRecovery.at(-1)!.at.getTime() - afterRecovery[0]!.at.getTime()) / 1000 : 0;
    const pacePerS = paceSpanS > 0 ? round((afterRecovery.length - 1) / paceSpanS, 1) : null;
    const drainPerS = drainS ? round(backlogAtRecovery / drainS, 1) : null;

    const throughputCheck = deliveryCheck(sent, engineAnswers.arrivals, throughputUnverified);
    const drainCheck = deliveryCheck(backlog, outageAnswers.arrivals, receiver.unverified() - throughputUnverified);
    const withinRateLimit = pacePerS !== null && pacePerS <= options.deliveryRateLimit * (1 + rateLimitSlack);
    const ceilingDelivered = ceilingAnswers.arrivals.filter((arrival) => arrival.delivered).length;
    return {
      concurrency,
      throughput: {
        notifications: sent.length,
        albums,
        rateLimit: maxRateLimit,
        engine: { delivered: engineAnswers.arrivals.filter((arrival) => arrival.delivered).length, ...engineFigures },
        ceiling: { delivered: ceilingDelivered, ...ceilingSender },
        throughputRatio: ratio(engineFigures.perS, ceilingSender.perS),
        cpuRatio: ratio(engineFigures.cpuMsPerNotification, ceilingSender.cpuMsPerNotification),
        check: throughputCheck,
      },
      drain: {
        notifications: backlog.length,
        albums: backlogAlbums,
        rateLimit: options.deliveryRateLimit,
        outageS: options.deliveryOutageSeconds,
        schedule,
        refused: attempts.filter((attempt) => !succeeded(attempt.status_code)).length,
        backlog: backlogAtRecovery,
        firstDeliveryS: firstDelivered ? round(Math.max(0, firstDelivered.at.getTime() - recoveredAt) / 1000, 2) : null,
        drainS: drainS === null ? null : round(drainS, 2),
        drainPerS,
        rateRatio: ratio(drainPerS, options.deliveryRateLimit),
        pacePerS,
        withinRateLimit,
        check: drainCheck,
      },
      ok: throughputCheck.ok && drainCheck.ok && withinRateLimit && ceilingDelivered === sent.length,
    };
  } finally {
    for (const child of started.reverse()) {
      delete stack.watched[child.name];
      await child.stop();
    }
    await receiver.close();
    await pool.end();
    fs.rmSync(bodiesFile, { force: true });
  }
}
