// The receivers of the fault suite and what their outage must not do. Beside the NOTIFY_URL receiver (the
// environment endpoint), a workspace adds two endpoints through the API: `steady`, which answers throughout,
// and `gone`, which answers 410 once the outage starts. The checks read the deliveries back from PostgreSQL
// and the album workflows' histories from Temporal: no album waited on a receiver, every notification
// recorded reached every endpoint that answers, in order per album, and the 410 endpoint is disabled.
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { environmentEndpointId } from '../../src/db/endpoints.js';
import type { Pool } from '../../src/db/pool.js';
import { webhookId } from '../../src/delivery/wire.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../harness/servers/webhook-receiver.js';
import type { ProcessStack } from '../harness/stack.js';

const EventType = temporal.api.enums.v1.EventType;

/** The token the suite's workspace manages its endpoints with (API_TOKENS). */
export const endpointsToken = 'faults-endpoints-token';

export interface OutageEndpoints {
  receiver: WebhookReceiver;
  /** Endpoint ids by the receiver's endpoint name. */
  ids: { steady: string; gone: string };
  /** From now on `gone` answers 410. */
  goneNow(): void;
  close(): Promise<void>;
}

/** Adds `steady` and `gone` to the stack's workspace through `POST /workspaces/:ws/endpoints`, as a customer would. */
export async function addOutageEndpoints(stack: Pick<ProcessStack, 'ingressUrls' | 'workspace'>): Promise<OutageEndpoints> {
  const receiver = await startWebhookReceiver();
  let gone = false;
  const answering = {
    steady: () => ({ status: 204, delayMs: 20 + Math.random() * 180 }),
    gone: () => (gone ? { status: 410 } : { status: 204, delayMs: 20 + Math.random() * 180 }),
  };
  const ids = { steady: '', gone: '' };
  for (const name of ['steady', 'gone'] as const) {
    const url = receiver.endpoint(name, [], answering[name]);
    const response = await fetch(`${stack.ingressUrls[0]}/workspaces/${stack.workspace}/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${endpointsToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, description: `fault suite: ${name}` }),
    });
    const body = (await response.json()) as { id: string; secret: string };
    if (response.status !== 201) throw new Error(`adding the endpoint ${name} answered ${response.status}: ${JSON.stringify(body)}`);
    receiver.setSecrets(name, [body.secret]);
    ids[name] = body.id;
  }
  return { receiver, ids, goneNow: () => (gone = true), close: () => receiver.close() };
}

/** The worker whose delivery engine holds the endpoint's lease now (its holder is `<host>:<pid>:<random>`). */
export async function leaseHolderPid(pool: Pool, endpointId: string): Promise<number | undefined> {
  const { rows } = await pool.query<{ leased_by: string }>(
    `SELECT leased_by FROM endpoints WHERE id = $1 AND leased_until > now() AND leased_by IS NOT NULL`,
    [endpointId],
  );
  const pid = Number(rows[0]?.leased_by.split(':').at(-2));
  return Number.isInteger(pid) ? pid : undefined;
}

export interface DeliveryReport {
  violations: string[];
  /** Per endpoint: deliveries recorded, delivered, and the last first acceptance (ms since epoch). */
  endpoints: Array<{ name: string; recorded: number; delivered: number; held: number; lastAcceptedAt: number }>;
  /** Requests the `gone` endpoint answered 410. */
  goneAnswers: number;
}

/**
 * Every delivery to an endpoint that answers is `delivered`, its webhook-id was accepted (answered 2xx) at
 * least once, and per album the first acceptances came in the order the notifications were recorded. The
 * `gone` endpoint is disabled as gone, got no more 410s than requests may be in flight at once, and holds
 * what was recorded after.
 */
export async function checkDeliveries(input: {
  pool: Pool;
  environment: ReceivedWebhook[];
  endpoints: OutageEndpoints;
  concurrency: number;
}): Promise<DeliveryReport> {
  const { pool, endpoints } = input;
  const violations: string[] = [];
  const report: DeliveryReport['endpoints'] = [];
  const reached = [
    { name: 'environment', id: environmentEndpointId, requests: input.environment },
    { name: 'steady', id: endpoints.ids.steady, requests: endpoints.receiver.received('steady') },
  ];
  for (const { name, id, requests } of reached) {
    const firstAccepted = new Map<string, { index: number; at: number }>();
    requests.forEach((request, index) => {
      const accepted = request.status !== undefined && request.status >= 200 && request.status < 300;
      if (accepted && !firstAccepted.has(request.webhookId)) firstAccepted.set(request.webhookId, { index, at: request.receivedAt });
    });
    const { rows } = await pool.query<{ notification_id: string; workflow_id: string; state: string }>(
      `SELECT d.notification_id, n.workflow_id, d.state FROM deliveries d JOIN notifications n ON n.id = d.notification_id
        WHERE d.endpoint_id = $1 ORDER BY n.position`,
      [id],
    );
    const lastIndex = new Map<string, { index: number; notificationId: string }>();
    let lastAcceptedAt = 0;
    for (const row of rows) {
      if (row.state !== 'delivered') violations.push(`${name}: ${row.notification_id} is ${row.state}`);
      const accepted = firstAccepted.get(webhookId(row.notification_id));
      if (!accepted) {
        violations.push(`${name}: ${row.notification_id} never accepted`);
        continue;
      }
      lastAcceptedAt = Math.max(lastAcceptedAt, accepted.at);
      const before = lastIndex.get(row.workflow_id);
      if (before && before.index > accepted.index) {
        violations.push(`${name}: ${row.notification_id} arrived before ${before.notificationId}, recorded earlier`);
      }
      lastIndex.set(row.workflow_id, { index: accepted.index, notificationId: row.notification_id });
    }
    const delivered = rows.filter((row) => row.state === 'delivered').length;
    report.push({ name, recorded: rows.length, delivered, held: 0, lastAcceptedAt });
  }

  const { rows: gone } = await pool.query<{
    enabled: boolean;
    disabled_reason: string | null;
    held: number;
    delivered: number;
    recorded: number;
  }>(
    `SELECT e.enabled, e.disabled_reason,
            count(*) FILTER (WHERE d.state = 'held')::int AS held,
            count(*) FILTER (WHERE d.state = 'delivered')::int AS delivered,
            count(d.id)::int AS recorded
       FROM endpoints e LEFT JOIN deliveries d ON d.endpoint_id = e.id WHERE e.id = $1 GROUP BY e.id`,
    [endpoints.ids.gone],
  );
  const goneRow = gone[0];
  const goneAnswers = endpoints.receiver.received('gone').filter((request) => request.status === 410).length;
  if (goneRow?.enabled !== false || goneRow.disabled_reason !== 'gone') {
    violations.push(`gone: the endpoint that answered 410 is ${goneRow?.enabled ? 'enabled' : `disabled (${goneRow?.disabled_reason})`}`);
  }
  if (goneAnswers === 0) violations.push('gone: never answered 410 (the outage did not reach it)');
  if (goneAnswers > input.concurrency) violations.push(`gone: answered 410 ${goneAnswers} times (at most ${input.concurrency} at once)`);
  if ((goneRow?.held ?? 0) === 0) violations.push('gone: holds no delivery');
  report.push({
    name: 'gone',
    recorded: goneRow?.recorded ?? 0,
    delivered: goneRow?.delivered ?? 0,
    held: goneRow?.held ?? 0,
    lastAcceptedAt: 0,
  });
  return { violations, endpoints: report, goneAnswers };
}

export interface AlbumsHeldReport {
  violations: string[];
  /** Albums with a decision recorded during the outage. */
  decided: number;
  /** Of them, closed before the outage ended. */
  closedDuringOutage: number;
  /** The longest time from an album's last decision to its close, ms. */
  slowestCloseMs: number;
}

const millis = (time: temporal.api.history.v1.IHistoryEvent['eventTime']) =>
  Number(time?.seconds ?? 0) * 1_000 + Math.floor((time?.nanos ?? 0) / 1e6);

/**
 * From the histories of the albums decided during the outage: each closed; each record-and-notify activity
 * scheduled during the outage completed at its first attempt (none retried on a receiver); and every album
 * whose last decision came `closeWithinMs` before the outage ended had closed before it ended.
 */
export async function checkAlbumsNotHeld(input: {
  pool: Pool;
  temporalAddress: string;
  outage: { from: number; to: number };
  closeWithinMs: number;
}): Promise<AlbumsHeldReport> {
  const { from, to } = input.outage;
  const { rows } = await input.pool.query<{ workflow_id: string; last_decided: Date }>(
    `SELECT workflow_id, max(recorded_at) AS last_decided FROM decisions WHERE workflow_id LIKE 'album:%'
      GROUP BY workflow_id HAVING bool_or(recorded_at BETWEEN to_timestamp($1 / 1000.0) AND to_timestamp($2 / 1000.0))`,
    [from, to],
  );
  const connection = await Connection.connect({ address: input.temporalAddress });
  const client = new Client({ connection });
  const violations: string[] = [];
  let closedDuringOutage = 0;
  let slowestCloseMs = 0;
  try {
    for (const { workflow_id: workflowId, last_decided: lastDecided } of rows) {
      const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const completed = events.find((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
      if (!completed) {
        violations.push(`${workflowId}: not completed`);
        continue;
      }
      const closedAt = millis(completed.eventTime);
      slowestCloseMs = Math.max(slowestCloseMs, closedAt - lastDecided.getTime());
      if (closedAt <= to) closedDuringOutage += 1;
      else if (lastDecided.getTime() <= to - input.closeWithinMs) {
        violations.push(
          `${workflowId}: last decided ${to - lastDecided.getTime()} ms before the receivers recovered, closed ${closedAt - to} ms after`,
        );
      }
      const duringOutage = new Set(
        events
          .filter(
            (event) =>
              event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
              event.activityTaskScheduledEventAttributes?.activityType?.name === 'recordAndNotify' &&
              millis(event.eventTime) >= from &&
              millis(event.eventTime) <= to,
          )
          .map((event) => Number(event.eventId)),
      );
      for (const event of events) {
        const started = event.activityTaskStartedEventAttributes;
        if (started && duringOutage.has(Number(started.scheduledEventId)) && (started.attempt ?? 1) > 1) {
          violations.push(`${workflowId}: recordAndNotify (event ${String(started.scheduledEventId)}) ran ${started.attempt} times`);
        }
      }
    }
  } finally {
    await connection.close();
  }
  return { violations, decided: rows.length, closedDuringOutage, slowestCloseMs };
}
