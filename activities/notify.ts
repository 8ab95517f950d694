import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { notificationFailuresTotal, notificationsTotal } from '../src/metrics.js';
import { signatureHeader } from '../src/signature.js';
import type { NotificationType } from '../workflows/types.js';
import type { ActivityDeps } from './index.js';

export interface Notification {
  /** `<workflowId>/<seq>[/<type>]`; the same on every retry, so receivers can deduplicate. */
  id: string;
  workflowId: string;
  type: NotificationType;
  /** Sent as the request body, exactly. */
  payload: object;
}

export type DeliveryOutcome = 'delivered' | 'recorded' | 'already';

export const notifyTimeoutMs = 10_000;

/**
 * Stores the notification unless it is stored already, and answers its status either way: one round trip.
 * A row another attempt committed after this statement began is not seen, and the attempt goes on as for
 * a pending one (as two attempts in flight at once always did).
 */
const recordSql = `
  WITH inserted AS (
    INSERT INTO notifications (id, workflow_id, type, payload) VALUES ($1, $2, $3, $4::jsonb)
    ON CONFLICT (id) DO NOTHING
    RETURNING status, last_error
  )
  SELECT status, last_error FROM inserted
   UNION ALL
  SELECT status, last_error FROM notifications WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`;

function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** A receiver's refusal for good: the activity is not retried. */
function rejection(id: string, error: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`notification ${id} rejected: ${error}`, 'NotificationRejected');
}

function requestFailure(err: unknown): string {
  if (err instanceof DOMException && err.name === 'TimeoutError') return `no response within ${notifyTimeoutMs / 1000} s`;
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

/**
 * Delivers album notifications to NOTIFY_URL, signed like the ingress (`x-albumflow-timestamp`,
 * `x-albumflow-signature: v1=<hex>`), or records them in PostgreSQL when no URL is configured.
 */
export function createNotifier(deps: ActivityDeps) {
  const { pool, logger } = deps;
  const { url, secret } = deps.config.notify;
  let warnedUnsigned = false;

  function signedHeaders(body: string): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-albumflow-timestamp': timestamp };
    if (secret) {
      headers['x-albumflow-signature'] = signatureHeader(secret, timestamp, body);
    } else if (!warnedUnsigned) {
      warnedUnsigned = true;
      logger.warn('NOTIFY_SECRET is not set: notifications are sent unsigned');
    }
    return headers;
  }

  async function recordFailure(n: Notification, error: string, retryable: boolean): Promise<never> {
    await pool.query(
      `UPDATE notifications SET attempts = attempts + 1, last_error = $2,
              status = CASE WHEN $3 THEN status ELSE 'failed' END
       WHERE id = $1`,
      [n.id, error, retryable],
    );
    notificationFailuresTotal.inc();
    logger.warn({ notificationId: n.id, type: n.type, workflowId: n.workflowId, error, retryable }, 'notification not delivered');
    if (retryable) throw ApplicationFailure.retryable(`notification ${n.id}: ${error}`, 'NotificationDeliveryFailed');
    notificationsTotal.inc({ type: n.type, outcome: 'failed' });
    throw rejection(n.id, error);
  }

  async function deliverNotification(n: Notification): Promise<DeliveryOutcome> {
    const body = JSON.stringify(n.payload);
    const { rows } = await pool.query<{ status: string; last_error: string | null }>(recordSql, [n.id, n.workflowId, n.type, body]);
    const status = rows[0]?.status;
    if (status === 'delivered' || status === 'recorded') {
      notificationsTotal.inc({ type: n.type, outcome: 'already' });
      return 'already';
    }
    // Refused for good by an earlier attempt (an activity that went on to its next notification and was
    // then retried): the same answer again, without asking the receiver twice.
    if (status === 'failed') throw rejection(n.id, rows[0]?.last_error ?? 'rejected');

    if (!url) {
      await pool.query(`UPDATE notifications SET status = 'recorded' WHERE id = $1`, [n.id]);
      logger.info({ notificationId: n.id, type: n.type, workflowId: n.workflowId }, 'notification recorded (NOTIFY_URL is not set)');
      notificationsTotal.inc({ type: n.type, outcome: 'recorded' });
      return 'recorded';
    }

    const cancellation = Context.current().cancellationSignal;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: signedHeaders(body),
        body,
        redirect: 'manual',
        signal: AbortSignal.any([cancellation, AbortSignal.timeout(notifyTimeoutMs)]),
      });
      await response.body?.cancel();
    } catch (err) {
      if (cancellation.aborted) throw cancellation.reason;
      return recordFailure(n, requestFailure(err), true);
    }
    if (!response.ok) return recordFailure(n, `HTTP ${response.status}`, isRetryableStatus(response.status));

    await pool.query(
      `UPDATE notifications SET status = 'delivered', delivered_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1`,
      [n.id],
    );
    notificationsTotal.inc({ type: n.type, outcome: 'delivered' });
    return 'delivered';
  }

  return { deliverNotification };
}
