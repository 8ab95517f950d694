// Notifications recorded for delivery, the queue of their deliveries to each endpoint, their attempts and
// the pull feed (migrations/1766000000000_outbound-delivery.sql). The sender (src/delivery/engine.ts)
// leases an endpoint, claims its sendable deliveries, sends outside any transaction and records the result.
import type { NotificationType } from '../domain/types.js';
import type { DecisionRecord } from '../domain/types.js';
import { decisionParameters, decisionStatement } from './decisions.js';
import { switchEndpoint, type DisabledReason, type EndpointSource } from './endpoints.js';
import type { Queryable } from './pool.js';

/** The trigger on deliveries notifies it when one becomes due now: senders in every process wake. */
export const deliveriesChannel = 'albumflow_deliveries';
/** The trigger on the feed notifies it (with the workspace) for every entry appended. */
export const feedChannel = 'albumflow_feed';

export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'held';

/** A notification's data as recorded: no `id` (the notification's own is put first on the wire) and no media links. */
export type NotificationData = { [key: string]: unknown; id?: never };

export interface NotificationToRecord {
  /** Its stable id (`<workflowId>/<seq>[/<type>]`). */
  id: string;
  /** The album's or the standalone message's: deliveries to one endpoint go out in order per workflow id. */
  workflowId: string;
  workspace: string;
  type: NotificationType;
  data: NotificationData;
  recordedAt: Date;
  /** The span that recorded it (tracing on and sampled): every attempt continues its trace. */
  traceparent?: string;
  /**
   * Recorded only while its album (by workflow id) or standalone message (by the data's `message.key`) is
   * stored: a workflow that runs on after an erasure removed its rows records nothing (docs/design.md, "Data lifetime").
   */
  whileStored?: boolean;
}

export interface RecordedNotification {
  /** False when a notification with this id was recorded already: nothing changed. */
  recorded: boolean;
  /** Its feed position; null when it was recorded already. */
  feedPosition: string | null;
  /** Deliveries queued (or held, for a disabled endpoint). */
  deliveries: number;
}

/**
 * The CTEs that record a notification, its feed entry and one delivery per endpoint subscribed now (its
 * workspace's whose types match, and the environment endpoint; a disabled one's is held), with the
 * parameters from `$<first>` on (notificationParameters). Idempotent by id. The workspace's feed position
 * stays locked until the statement's transaction ends, so that positions become visible in commit order.
 */
function notificationStatement(first: number): string {
  const $ = (n: number) => `$${first + n - 1}`;
  return `stored_album AS (
       -- Locked, so that a purge of the album or message waits for this statement, or this one sees it gone.
       SELECT 1 FROM albums WHERE workflow_id = ${$(2)} FOR KEY SHARE
     ), stored_message AS (
       SELECT 1 FROM messages m, jsonb_to_record(${$(5)}::jsonb->'message'->'key')
                                   AS k (workspace text, provider text, "accountId" text, "conversationId" text, "messageId" text)
        WHERE m.workspace = k.workspace AND m.provider = k.provider AND m.account_id = k."accountId"
          AND m.conversation_id = k."conversationId" AND m.message_id = k."messageId"
          FOR KEY SHARE OF m
     ), recorded AS (
       INSERT INTO notifications (id, workflow_id, workspace, type, payload, created_at, traceparent)
       SELECT ${$(1)}::text, ${$(2)}::text, ${$(3)}::text, ${$(4)}::text, ${$(5)}::jsonb, ${$(6)}::timestamptz, ${$(7)}::text
        WHERE NOT ${$(8)}::boolean OR EXISTS (SELECT 1 FROM stored_album) OR EXISTS (SELECT 1 FROM stored_message)
       ON CONFLICT (id) DO NOTHING
       RETURNING id, workflow_id, workspace, position
     ), subscribed AS (
       -- Locked so that an endpoint removed meanwhile is skipped instead of failing the foreign key.
       SELECT id, enabled FROM endpoints
        WHERE (workspace = ${$(3)} OR source = 'environment') AND (types IS NULL OR ${$(4)} = ANY (types))
          FOR KEY SHARE
     ), appended AS (
       INSERT INTO feed_positions (workspace, position) SELECT workspace, 1 FROM recorded
       ON CONFLICT (workspace) DO UPDATE SET position = feed_positions.position + 1
       RETURNING position
     ), fed AS (
       INSERT INTO feed (workspace, position, notification_id) SELECT r.workspace, a.position, r.id FROM recorded r, appended a
       RETURNING position
     ), queued AS (
       INSERT INTO deliveries (notification_id, endpoint_id, workspace, order_key, position, state, next_attempt_at)
       SELECT r.id, s.id, r.workspace, r.workflow_id, r.position, CASE WHEN s.enabled THEN 'pending' ELSE 'held' END,
              GREATEST(now(), (SELECT max(ahead.next_attempt_at) FROM deliveries ahead
                                WHERE ahead.endpoint_id = s.id AND ahead.order_key = r.workflow_id AND ahead.state = 'pending'))
         FROM recorded r, subscribed s
       RETURNING 1
     )`;
}

function notificationParameters(n: NotificationToRecord): unknown[] {
  return [n.id, n.workflowId, n.workspace, n.type, JSON.stringify(n.data), n.recordedAt, n.traceparent ?? null, n.whileStored ?? false];
}

const recordedColumns = `(SELECT position::text FROM fed) AS feed_position, (SELECT count(*)::int FROM queued) AS deliveries`;

function recordedOf(row: { feed_position: string | null; deliveries: number }): RecordedNotification {
  return { recorded: row.feed_position !== null, feedPosition: row.feed_position, deliveries: row.deliveries };
}

/** Records a notification (notificationStatement) in one statement. */
export async function recordNotification(db: Queryable, n: NotificationToRecord): Promise<RecordedNotification> {
  const { rows } = await db.query<{ feed_position: string | null; deliveries: number }>(
    `WITH ${notificationStatement(1)} SELECT ${recordedColumns}`,
    notificationParameters(n),
  );
  return recordedOf(rows[0]!);
}

/**
 * Records a decision and the notification it causes in one statement: neither is ever stored without the
 * other, and the album's row and the workspace's feed position are locked only while PostgreSQL runs it.
 */
export async function recordDecisionAndNotification(
  db: Queryable,
  decision: DecisionRecord,
  n: NotificationToRecord,
): Promise<RecordedNotification & { decided: boolean }> {
  const { rows } = await db.query<{ feed_position: string | null; deliveries: number; decided: number }>(
    `WITH ${decisionStatement(1)}, ${notificationStatement(10)}
     SELECT ${recordedColumns}, (SELECT count(*)::int FROM decided) AS decided`,
    [...decisionParameters(decision), ...notificationParameters(n)],
  );
  const row = rows[0]!;
  return { ...recordedOf(row), decided: row.decided === 1 };
}

/**
 * A delivery that may be attempted now (alias `d`): pending, due, not in flight, and the first of its order
 * key to its endpoint still pending or held. That last condition alone decides the order; so that the scans
 * for due deliveries meet few that wait behind another, a pending delivery is kept from being due before the
 * pending one ahead of it (recordNotification, recordAttempt). It is written as one lookup of the order index
 * per candidate: as a NOT EXISTS, PostgreSQL planned it as a pass over every undelivered delivery of the
 * endpoint whenever its statistics counted few (a fresh table, or a backlog built since the last ANALYZE),
 * and each claim of a 1,500-delivery backlog took 1.3–2.3 s instead of milliseconds.
 */
const sendable = `d.state = 'pending' AND d.next_attempt_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
  AND d.position = (SELECT min(earlier.position) FROM deliveries earlier
                     WHERE earlier.endpoint_id = d.endpoint_id AND earlier.order_key = d.order_key
                       AND earlier.state IN ('pending', 'held'))`;

/** An endpoint a sender holds: where to send and how fast. */
export interface LeasedEndpoint {
  id: string;
  workspace: string | null;
  source: EndpointSource;
  url: string;
  rateLimit: number;
  failingSince: Date | null;
}

interface LeasedRow {
  id: string;
  workspace: string | null;
  source: EndpointSource;
  url: string;
  rate_limit: number;
  failing_since: Date | null;
}

const leasedColumns = 'id, workspace, source, url, rate_limit, failing_since';

function leasedOf(row: LeasedRow): LeasedEndpoint {
  return {
    id: row.id,
    workspace: row.workspace,
    source: row.source,
    url: row.url,
    rateLimit: row.rate_limit,
    failingSince: row.failing_since,
  };
}

/**
 * Leases up to `limit` enabled endpoints that have a sendable delivery and no live lease, for `holder`, the
 * ones leased longest ago first; `busy` are skipped (the holder works them already).
 */
export async function leaseEndpoints(
  db: Queryable,
  lease: { holder: string; leaseMs: number; limit: number; busy: readonly string[] },
): Promise<LeasedEndpoint[]> {
  const { rows } = await db.query<LeasedRow>(
    `WITH picked AS MATERIALIZED (
       SELECT e.id FROM endpoints e
        CROSS JOIN LATERAL (SELECT 1 FROM deliveries d WHERE d.endpoint_id = e.id AND ${sendable} LIMIT 1) sendable
        WHERE e.enabled AND (e.leased_until IS NULL OR e.leased_until <= now()) AND e.id <> ALL ($4::text[])
        ORDER BY e.leased_until NULLS FIRST, e.id
        LIMIT $3
          FOR NO KEY UPDATE OF e SKIP LOCKED
     )
     UPDATE endpoints e SET leased_by = $1, leased_until = now() + $2::float8 * interval '1 millisecond'
       FROM picked WHERE e.id = picked.id
     RETURNING e.id, e.workspace, e.source, e.url, e.rate_limit, e.failing_since`,
    [lease.holder, lease.leaseMs, lease.limit, lease.busy],
  );
  return rows.map(leasedOf);
}

/** Extends the holder's lease; undefined when it is no longer the holder's or the endpoint is disabled or gone. */
export async function renewEndpointLease(db: Queryable, id: string, holder: string, leaseMs: number): Promise<LeasedEndpoint | undefined> {
  const { rows } = await db.query<LeasedRow>(
    `UPDATE endpoints SET leased_until = now() + $3::float8 * interval '1 millisecond'
      WHERE id = $1 AND leased_by = $2 AND enabled
      RETURNING ${leasedColumns}`,
    [id, holder, leaseMs],
  );
  return rows[0] && leasedOf(rows[0]);
}

/** Ends the holder's lease now; the endpoint goes after the ones leased longer ago (or never) in the next leases. */
export async function releaseEndpoint(db: Queryable, id: string, holder: string): Promise<void> {
  await db.query(`UPDATE endpoints SET leased_by = NULL, leased_until = now() WHERE id = $1 AND leased_by = $2`, [id, holder]);
}

/** A delivery claimed for one attempt, with what its notification says. */
export interface ClaimedDelivery {
  id: string;
  notificationId: string;
  /** The notification's workspace (also for the environment endpoint's deliveries). */
  workspace: string;
  /** Attempts of its current schedule before this one. */
  attempts: number;
  type: NotificationType;
  recordedAt: Date;
  data: NotificationData;
  /** The span that recorded the notification, which the attempt continues; null when it was not traced. */
  traceparent: string | null;
}

/**
 * Claims up to `limit` sendable deliveries of the endpoint, the longest due first, for one attempt each: until
 * `leaseMs` passed, no process claims them again.
 */
export async function claimDeliveries(
  db: Queryable,
  claim: { endpointId: string; limit: number; leaseMs: number },
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<{
    id: string;
    position: string;
    notification_id: string;
    workspace: string;
    attempts: number;
    type: NotificationType;
    created_at: Date;
    payload: NotificationData;
    traceparent: string | null;
  }>(
    `WITH picked AS MATERIALIZED (
       SELECT d.id FROM deliveries d
        WHERE d.endpoint_id = $1 AND ${sendable}
        ORDER BY d.next_attempt_at, d.position
        LIMIT $2
          FOR UPDATE SKIP LOCKED
     )
     UPDATE deliveries d SET leased_until = now() + $3::float8 * interval '1 millisecond'
       FROM picked, notifications n
      WHERE d.id = picked.id AND n.id = d.notification_id
     RETURNING d.id::text, d.position::text, d.notification_id, d.workspace, d.attempts, n.type, n.created_at, n.payload, n.traceparent`,
    [claim.endpointId, claim.limit, claim.leaseMs],
  );
  return rows
    .sort((a, b) => Number(BigInt(a.position) - BigInt(b.position)))
    .map((row) => ({
      id: row.id,
      notificationId: row.notification_id,
      workspace: row.workspace,
      attempts: row.attempts,
      type: row.type,
      recordedAt: row.created_at,
      data: row.payload,
      traceparent: row.traceparent,
    }));
}

/**
 * Hands back a claimed delivery whose attempt was not made (its endpoint went off, or the sender stopped, while
 * it waited its turn): sendable again at once instead of when its lease runs out. A delivery settled meanwhile
 * is left as it is.
 */
export async function releaseDelivery(db: Queryable, delivery: Pick<ClaimedDelivery, 'id' | 'attempts'>): Promise<void> {
  await db.query(`UPDATE deliveries SET leased_until = NULL WHERE id = $1 AND attempts = $2`, [delivery.id, delivery.attempts]);
}

/** What an attempt does to its endpoint. */
export type EndpointOutcome = 'succeeded' | 'failed' | Exclude<DisabledReason, 'operator'>;

/** What an attempt does to its delivery: `pending` with the delay before the next attempt. */
export type DeliveryVerdict = { state: 'delivered' } | { state: 'pending'; retryInMs: number } | { state: 'failed' } | { state: 'held' };

export interface AttemptRecord {
  deliveryId: string;
  endpointId: string;
  /** The claimed delivery's attempts: a result for a delivery changed since it was claimed does not settle it. */
  attemptsBefore: number;
  at: Date;
  /** Null when no answer came (network error, timeout, refused address). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** At most 1 KB of the receiver's answer. */
  response: string | null;
  delivery: DeliveryVerdict;
  endpoint: EndpointOutcome;
}

/**
 * Records an attempt and settles its delivery and endpoint in one statement; a 410 or five days of failures
 * then disable the endpoint and hold its pending deliveries (switchEndpoint, which waits for notifications
 * being recorded for it). Answers the endpoint's state after it (undefined when the endpoint is gone).
 */
export async function recordAttempt(db: Queryable, a: AttemptRecord): Promise<{ enabled: boolean; failingSince: Date | null } | undefined> {
  const retryInMs = a.delivery.state === 'pending' ? a.delivery.retryInMs : 0;
  const { rows } = await db.query<{ enabled: boolean; failing_since: Date | null }>(
    `WITH attempt AS (
       INSERT INTO delivery_attempts (delivery_id, at, status_code, duration_ms, error, response)
       SELECT id, $4, $5, $6, $7, $8 FROM deliveries WHERE id = $1
     ), settled AS (
       UPDATE deliveries
          SET attempts = attempts + 1,
              state = CASE WHEN $9 = 'delivered' THEN 'delivered' WHEN state = 'held' THEN 'held' ELSE $9 END,
              next_attempt_at = CASE WHEN $9 = 'pending' THEN now() + $10::float8 * interval '1 millisecond' ELSE next_attempt_at END,
              leased_until = NULL,
              last_attempt_at = $4,
              delivered_at = CASE WHEN $9 = 'delivered' THEN now() ELSE delivered_at END
        WHERE id = $1 AND attempts = $3 AND state IN ('pending', 'held')
        RETURNING endpoint_id, order_key, position, state, next_attempt_at
     ), behind AS (
       -- The pending ones behind it are not due before its next attempt, or are due now that it is done.
       UPDATE deliveries later
          SET next_attempt_at = CASE WHEN s.state = 'pending' THEN GREATEST(later.next_attempt_at, s.next_attempt_at)
                                     ELSE LEAST(later.next_attempt_at, now()) END
         FROM settled s
        WHERE later.endpoint_id = s.endpoint_id AND later.order_key = s.order_key AND later.position > s.position
          AND later.state = 'pending' AND s.state <> 'held'
     ), endpoint AS (
       UPDATE endpoints
          SET last_success_at = CASE WHEN $11 = 'succeeded' THEN now() ELSE last_success_at END,
              failing_since = CASE WHEN $11 = 'succeeded' THEN NULL ELSE COALESCE(failing_since, $4) END
        WHERE id = $2
        RETURNING enabled, failing_since
     )
     SELECT enabled, failing_since FROM endpoint`,
    [
      a.deliveryId,
      a.endpointId,
      a.attemptsBefore,
      a.at,
      a.statusCode,
      a.durationMs,
      a.error,
      a.response,
      a.delivery.state,
      retryInMs,
      a.endpoint,
    ],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (a.endpoint === 'gone' || a.endpoint === 'failing') {
    const disabled = await switchEndpoint(db, a.endpointId, { enabled: false, reason: a.endpoint });
    return disabled && { enabled: disabled.enabled, failingSince: disabled.failingSince };
  }
  return { enabled: row.enabled, failingSince: row.failing_since };
}

const deliveryIdPattern = /^[1-9]\d{0,17}$/;

/**
 * Makes one delivery of the endpoint due now: a pending one stops waiting for its next scheduled attempt, a
 * delivered or failed one starts a new schedule (held, while the endpoint is disabled). Its order holds: it
 * goes after the earlier ones of its album that are still pending or held. Undefined for an unknown delivery.
 */
export async function retryDelivery(db: Queryable, endpointId: string, deliveryId: string): Promise<DeliveryState | undefined> {
  if (!deliveryIdPattern.test(deliveryId)) return undefined;
  const { rows } = await db.query<{ state: DeliveryState }>(
    `WITH endpoint AS (
       -- Locked as a recording locks it: an endpoint being switched on or off is read as the switch leaves it.
       SELECT id, enabled FROM endpoints WHERE id = $1 FOR KEY SHARE
     )
     UPDATE deliveries d
        SET state = CASE WHEN d.state IN ('pending', 'held') THEN d.state WHEN e.enabled THEN 'pending' ELSE 'held' END,
            attempts = CASE WHEN d.state IN ('pending', 'held') THEN d.attempts ELSE 0 END,
            next_attempt_at = now()
       FROM endpoint e
      WHERE d.id = $2::bigint AND d.endpoint_id = e.id
      RETURNING d.state`,
    [endpointId, deliveryId],
  );
  return rows[0]?.state;
}

/**
 * Makes every notification recorded since `since` that the endpoint subscribes to now due at once, each
 * under its own id and in its order: one without a delivery to this endpoint gets one, a delivered or failed
 * one starts a new schedule, a pending one just stops waiting. Answers how many deliveries that touched.
 */
export async function replaySince(db: Queryable, endpointId: string, since: Date): Promise<number> {
  const { rowCount } = await db.query(
    `WITH endpoint AS (
       -- Locked as a recording locks it: an endpoint being switched on or off is read as the switch leaves it.
       SELECT id, workspace, types, enabled FROM endpoints WHERE id = $1 FOR KEY SHARE
     ), replayed AS (
       SELECT n.id, n.workspace, n.workflow_id, n.position
         FROM notifications n, endpoint e
        WHERE n.workspace IS NOT NULL AND n.created_at >= $2
          AND (e.workspace IS NULL OR n.workspace = e.workspace) AND (e.types IS NULL OR n.type = ANY (e.types))
     )
     INSERT INTO deliveries (notification_id, endpoint_id, workspace, order_key, position, state)
     SELECT r.id, e.id, r.workspace, r.workflow_id, r.position, CASE WHEN e.enabled THEN 'pending' ELSE 'held' END
       FROM replayed r, endpoint e
     ON CONFLICT (notification_id, endpoint_id) DO UPDATE
        SET state = CASE WHEN deliveries.state IN ('pending', 'held') THEN deliveries.state ELSE EXCLUDED.state END,
            attempts = CASE WHEN deliveries.state IN ('pending', 'held') THEN deliveries.attempts ELSE 0 END,
            next_attempt_at = now()`,
    [endpointId, since],
  );
  return rowCount ?? 0;
}

export interface AttemptView {
  at: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  response: string | null;
}

export interface DeliveryView {
  id: string;
  notificationId: string;
  endpointId: string;
  workspace: string;
  type: NotificationType;
  state: DeliveryState;
  /** Attempts of the current schedule. */
  attempts: number;
  /** When a pending delivery is due. */
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
  /** Every attempt, oldest first. */
  history: AttemptView[];
}

interface DeliveryViewRow {
  id: string;
  notification_id: string;
  endpoint_id: string;
  workspace: string;
  type: NotificationType;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Date;
  delivered_at: Date | null;
  created_at: Date;
  history: Array<{ at: string; statusCode: number | null; durationMs: number; error: string | null; response: string | null }>;
}

const deliveryViewColumns = `d.id::text, d.notification_id, d.endpoint_id, d.workspace, n.type, d.state, d.attempts, d.next_attempt_at,
  d.delivered_at, d.created_at,
  COALESCE((SELECT json_agg(json_build_object('at', a.at, 'statusCode', a.status_code, 'durationMs', a.duration_ms,
                                              'error', a.error, 'response', a.response) ORDER BY a.id)
              FROM delivery_attempts a WHERE a.delivery_id = d.id), '[]') AS history`;

function deliveryViewOf(row: DeliveryViewRow): DeliveryView {
  return {
    id: row.id,
    notificationId: row.notification_id,
    endpointId: row.endpoint_id,
    workspace: row.workspace,
    type: row.type,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
    deliveredAt: row.delivered_at,
    createdAt: row.created_at,
    history: row.history.map((attempt) => ({ ...attempt, at: new Date(attempt.at) })),
  };
}

/** The endpoint's deliveries, newest first, with their attempts; `before`: older than that delivery id (the next page). */
export async function listDeliveries(
  db: Queryable,
  endpointId: string,
  query: { state?: DeliveryState; limit: number; before?: string },
): Promise<DeliveryView[]> {
  const { rows } = await db.query<DeliveryViewRow>(
    `SELECT ${deliveryViewColumns}
       FROM deliveries d JOIN notifications n ON n.id = d.notification_id
      WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.state = $2) AND ($4::bigint IS NULL OR d.id < $4::bigint)
      ORDER BY d.id DESC
      LIMIT $3`,
    [
      endpointId,
      query.state ?? null,
      query.limit,
      query.before !== undefined && deliveryIdPattern.test(query.before) ? query.before : null,
    ],
  );
  return rows.map(deliveryViewOf);
}

/** Where each notification of an album (or standalone message) went, in the order they were recorded. */
export async function deliveriesOf(db: Queryable, workflowId: string): Promise<DeliveryView[]> {
  const { rows } = await db.query<DeliveryViewRow>(
    `SELECT ${deliveryViewColumns}
       FROM notifications n JOIN deliveries d ON d.notification_id = n.id
      WHERE n.workflow_id = $1
      ORDER BY d.position, d.endpoint_id`,
    [workflowId],
  );
  return rows.map(deliveryViewOf);
}

export interface EndpointBacklog {
  endpointId: string;
  /** Null for the environment endpoint. */
  workspace: string | null;
  /** Deliveries pending or held. */
  backlog: number;
  /** Age of the oldest of them, 0 when there is none. */
  oldestSeconds: number;
}

export async function deliveryBacklog(db: Queryable): Promise<EndpointBacklog[]> {
  const { rows } = await db.query<{ id: string; workspace: string | null; backlog: number; oldest_seconds: number }>(
    `SELECT e.id, e.workspace, count(d.id)::int AS backlog,
            COALESCE(extract(epoch FROM now() - min(d.created_at)), 0)::float8 AS oldest_seconds
       FROM endpoints e LEFT JOIN deliveries d ON d.endpoint_id = e.id AND d.state IN ('pending', 'held')
      GROUP BY e.id, e.workspace
      ORDER BY e.id`,
  );
  return rows.map((row) => ({ endpointId: row.id, workspace: row.workspace, backlog: row.backlog, oldestSeconds: row.oldest_seconds }));
}

/** What an endpoint has yet to deliver, and what it gave up on. */
export interface EndpointCounts {
  /** Deliveries pending or held. */
  backlog: number;
  /** When the oldest of them was recorded; null when there is none. */
  oldestUndeliveredAt: Date | null;
  /** Deliveries whose attempts are exhausted. */
  failed: number;
}

export const noDeliveries: EndpointCounts = { backlog: 0, oldestUndeliveredAt: null, failed: 0 };

/** The counts of each of these endpoints that has a delivery pending, held or failed. */
export async function endpointCounts(db: Queryable, endpointIds: readonly string[]): Promise<Map<string, EndpointCounts>> {
  const { rows } = await db.query<{ endpoint_id: string; backlog: number; oldest: Date | null; failed: number }>(
    `SELECT endpoint_id, count(*) FILTER (WHERE state IN ('pending', 'held'))::int AS backlog,
            min(created_at) FILTER (WHERE state IN ('pending', 'held')) AS oldest,
            count(*) FILTER (WHERE state = 'failed')::int AS failed
       FROM deliveries
      WHERE endpoint_id = ANY ($1::text[]) AND state IN ('pending', 'held', 'failed')
      GROUP BY endpoint_id`,
    [endpointIds],
  );
  return new Map(rows.map((row) => [row.endpoint_id, { backlog: row.backlog, oldestUndeliveredAt: row.oldest, failed: row.failed }]));
}

export interface FeedEntry {
  /** Its position in the workspace's feed: the reader's cursor. */
  position: string;
  notificationId: string;
  type: NotificationType;
  recordedAt: Date;
  data: NotificationData;
}

/** Up to `limit` entries of the workspace's feed after position `after` ('0': from the start), of `types` only when given. */
export async function readFeed(
  db: Queryable,
  workspace: string,
  query: { after: string; limit: number; types?: readonly NotificationType[] },
): Promise<FeedEntry[]> {
  const { rows } = await db.query<{ position: string; id: string; type: NotificationType; created_at: Date; payload: NotificationData }>(
    `SELECT f.position::text, n.id, n.type, n.created_at, n.payload
       FROM feed f JOIN notifications n ON n.id = f.notification_id
      WHERE f.workspace = $1 AND f.position > $2::bigint AND ($4::text[] IS NULL OR n.type = ANY ($4::text[]))
      ORDER BY f.position
      LIMIT $3`,
    [workspace, query.after, query.limit, query.types ?? null],
  );
  return rows.map((row) => ({
    position: row.position,
    notificationId: row.id,
    type: row.type,
    recordedAt: row.created_at,
    data: row.payload,
  }));
}

export interface PurgedDeliveryRecords {
  deliveries: number;
  attempts: number;
  feedEntries: number;
}

/**
 * Removes the deliveries, their attempts and the feed entries of these workflows' notifications (an erasure
 * or a purge; removing the notifications removes them too, this counts them for the receipt).
 */
export async function purgeDeliveryRecords(db: Queryable, workflowIds: readonly string[]): Promise<PurgedDeliveryRecords> {
  const { rows } = await db.query<{ deliveries: number; attempts: number; feed_entries: number }>(
    `WITH purged AS (
       SELECT id FROM notifications WHERE workflow_id = ANY ($1::text[])
     ), attempts_gone AS (
       DELETE FROM delivery_attempts a USING deliveries d
        WHERE a.delivery_id = d.id AND d.notification_id IN (SELECT id FROM purged)
       RETURNING 1
     ), deliveries_gone AS (
       DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM purged) RETURNING 1
     ), feed_gone AS (
       DELETE FROM feed WHERE notification_id IN (SELECT id FROM purged) RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM deliveries_gone) AS deliveries, (SELECT count(*)::int FROM attempts_gone) AS attempts,
            (SELECT count(*)::int FROM feed_gone) AS feed_entries`,
    [workflowIds],
  );
  const row = rows[0]!;
  return { deliveries: row.deliveries, attempts: row.attempts, feedEntries: row.feed_entries };
}
