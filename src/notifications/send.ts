// Sending a stored-first notification to NOTIFY_URL, signed like the ingress (`x-albumflow-timestamp`,
// `x-albumflow-signature: v1=<hex>`), or recording it in PostgreSQL when no URL is configured.
import type { Config } from '../common/config.js';
import { errorMessage } from '../common/error-message.js';
import type { Logger } from '../common/log.js';
import { notificationFailuresTotal, notificationsTotal } from '../common/metrics.js';
import { signatureHeader } from '../common/signature.js';
import { withTraceHeaders } from '../common/tracing.js';
import {
  markNotificationDelivered,
  markNotificationRecorded,
  recordNotificationFailure,
  storeNotification,
  type NotificationRecord,
} from '../db/notifications.js';
import type { Pool } from '../db/pool.js';
import type { NotifyOutcome } from '../../workflows/activity-types.js';

export const notifyTimeoutMs = 10_000;

/** A notification not delivered: `retryable` says whether another attempt may be (the receiver's answer was not a refusal for good). */
export class NotificationNotDelivered extends Error {
  constructor(
    readonly id: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export interface Sender {
  pool: Pool;
  logger: Logger;
  url: string | undefined;
  secret: string | undefined;
  /** Whether the warning that notifications go unsigned was logged. */
  warnedUnsigned: boolean;
}

export function createSender(pool: Pool, logger: Logger, { notify }: Pick<Config, 'notify'>): Sender {
  return { pool, logger, url: notify.url, secret: notify.secret, warnedUnsigned: false };
}

function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

function signedHeaders(sender: Sender, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-albumflow-timestamp': timestamp };
  if (sender.secret) {
    headers['x-albumflow-signature'] = signatureHeader(sender.secret, timestamp, body);
  } else if (!sender.warnedUnsigned) {
    sender.warnedUnsigned = true;
    sender.logger.warn('NOTIFY_SECRET is not set: notifications are sent unsigned');
  }
  return headers;
}

async function failed(sender: Sender, n: NotificationRecord, error: string, retryable: boolean): Promise<never> {
  await recordNotificationFailure(sender.pool, n.id, error, retryable);
  notificationFailuresTotal.inc();
  sender.logger.warn({ notificationId: n.id, type: n.type, workflowId: n.workflowId, error, retryable }, 'notification not delivered');
  if (!retryable) notificationsTotal.inc({ type: n.type, outcome: 'failed' });
  throw new NotificationNotDelivered(n.id, error, retryable);
}

/**
 * Sends (or records) one notification, stored first under its id, so a retry or a replay sends it at most
 * once more; throws NotificationNotDelivered when the receiver did not take it.
 */
export async function sendNotification(sender: Sender, n: NotificationRecord, cancellation: AbortSignal): Promise<NotifyOutcome> {
  const { pool, logger, url } = sender;
  const stored = await storeNotification(pool, n);
  if (stored.status === 'delivered' || stored.status === 'recorded') {
    notificationsTotal.inc({ type: n.type, outcome: 'already' });
    return 'already';
  }
  // Refused for good by an earlier attempt (an activity that went on to its next notification and was
  // then retried): the same answer again, without asking the receiver twice.
  if (stored.status === 'failed') throw new NotificationNotDelivered(n.id, stored.lastError ?? 'rejected', false);

  if (!url) {
    await markNotificationRecorded(pool, n.id);
    logger.info({ notificationId: n.id, type: n.type, workflowId: n.workflowId }, 'notification recorded (NOTIFY_URL is not set)');
    notificationsTotal.inc({ type: n.type, outcome: 'recorded' });
    return 'recorded';
  }

  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      // W3C trace context (traceparent) of this notification's span, so that the receiver continues the trace.
      headers: withTraceHeaders(signedHeaders(sender, n.body)),
      body: n.body,
      redirect: 'manual',
      signal: AbortSignal.any([cancellation, AbortSignal.timeout(notifyTimeoutMs)]),
    });
    await response.body?.cancel();
  } catch (err) {
    if (cancellation.aborted) throw cancellation.reason;
    const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
    return failed(sender, n, timedOut ? `no response within ${notifyTimeoutMs / 1000} s` : errorMessage(err), true);
  }
  if (!response.ok) return failed(sender, n, `HTTP ${response.status}`, isRetryableStatus(response.status));

  await markNotificationDelivered(pool, n.id);
  notificationsTotal.inc({ type: n.type, outcome: 'delivered' });
  return 'delivered';
}
