import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  markNotificationDelivered,
  markNotificationRecorded,
  recordNotificationFailure,
  storeNotification,
  type NotificationRecord,
} from '../src/db/notifications.js';
import { albumStatusFromDatabase, findAlbum } from '../src/db/status.js';
import { errorMessage } from '../src/common/error-message.js';
import { notificationFailuresTotal, notificationsTotal } from '../src/common/metrics.js';
import { annotate, inSpan, linksTo, withTraceHeaders } from '../src/common/tracing.js';
import { changeTraceparent } from '../src/db/decisions.js';
import { signatureHeader } from '../src/common/signature.js';
import type { AlbumKey, AlbumView, AttachmentView, ChildEdit, ChildView, ChildWithdrawal, NotificationType } from '../src/domain/types.js';
import { mediaLinksFor, type MediaLinks } from '../src/media/links.js';
import type { NotifyInput, NotifyOutcome } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';
import { albumProfileOf } from '../src/platforms/index.js';

export const notifyTimeoutMs = 10_000;

/**
 * `<workflowId>/<seq>` for the notification a decision causes, `<workflowId>/<seq>/album.media_settled`
 * for its first media notice and `…/album.media_settled/<n>` for the n-th, `<workflowId>/edited/<message
 * id, URL-encoded>/<version>` for the edit of a decided child (whichever decision it follows), and
 * `<workflowId>/<unsent | deleted>/<message id, URL-encoded>` for its withdrawal. The same on every
 * retry, so receivers can deduplicate.
 */
export function notificationId(
  workflowId: string,
  seq: number,
  type: NotificationType,
  notice = 1,
  edit?: ChildEdit,
  unsent?: ChildWithdrawal,
): string {
  if (edit) return `${workflowId}/edited/${encodeURIComponent(edit.messageId)}/${edit.version}`;
  if (unsent) return `${workflowId}/${unsent.change ?? 'unsent'}/${encodeURIComponent(unsent.messageId)}`;
  if (type !== 'album.media_settled') return `${workflowId}/${seq}`;
  return notice > 1 ? `${workflowId}/${seq}/${type}/${notice}` : `${workflowId}/${seq}/${type}`;
}

/** An attachment as a notification carries it: with `media_url` once its file is downloaded. */
type NotifiedAttachment = AttachmentView & { media_url?: string };

/** The child with a signed `media_url` on each downloaded attachment (the receiver fetches the file with it, no token). */
async function withMediaUrls(links: MediaLinks, workspace: string, child: ChildView): Promise<ChildView> {
  const attachments = await Promise.all(
    child.attachments.map(async (attachment): Promise<NotifiedAttachment> =>
      attachment.status === 'downloaded' && attachment.sha256
        ? { ...attachment, media_url: await links.url(workspace, attachment.sha256) }
        : attachment,
    ),
  );
  return { ...child, attachments };
}

function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** A receiver's refusal for good: the activity is not retried. */
function rejection(id: string, error: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`notification ${id} rejected: ${error}`, 'NotificationRejected');
}

/**
 * Sends notifications to NOTIFY_URL, signed like the ingress (`x-albumflow-timestamp`,
 * `x-albumflow-signature: v1=<hex>`), or records them in PostgreSQL when no URL is configured.
 * Each is stored under its stable id first, so a retry or a replay sends it at most once more.
 */
export function createNotifyActivities(deps: ActivityDeps) {
  const { pool, logger } = deps;
  const { url, secret } = deps.config.notify;
  const links = mediaLinksFor(deps.config, pool);
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

  async function failed(n: NotificationRecord, error: string, retryable: boolean): Promise<never> {
    await recordNotificationFailure(pool, n.id, error, retryable);
    notificationFailuresTotal.inc();
    logger.warn({ notificationId: n.id, type: n.type, workflowId: n.workflowId, error, retryable }, 'notification not delivered');
    if (retryable) throw ApplicationFailure.retryable(`notification ${n.id}: ${error}`, 'NotificationDeliveryFailed');
    notificationsTotal.inc({ type: n.type, outcome: 'failed' });
    throw rejection(n.id, error);
  }

  /** Sends (or records) one stored-first notification. */
  async function send(n: NotificationRecord): Promise<NotifyOutcome> {
    const stored = await storeNotification(pool, n);
    if (stored.status === 'delivered' || stored.status === 'recorded') {
      notificationsTotal.inc({ type: n.type, outcome: 'already' });
      return 'already';
    }
    // Refused for good by an earlier attempt (an activity that went on to its next notification and was
    // then retried): the same answer again, without asking the receiver twice.
    if (stored.status === 'failed') throw rejection(n.id, stored.lastError ?? 'rejected');

    if (!url) {
      await markNotificationRecorded(pool, n.id);
      logger.info({ notificationId: n.id, type: n.type, workflowId: n.workflowId }, 'notification recorded (NOTIFY_URL is not set)');
      notificationsTotal.inc({ type: n.type, outcome: 'recorded' });
      return 'recorded';
    }

    const cancellation = Context.current().cancellationSignal;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        // W3C trace context (traceparent) of this notification's span, so that the receiver continues the trace.
        headers: withTraceHeaders(signedHeaders(n.body)),
        body: n.body,
        redirect: 'manual',
        signal: AbortSignal.any([cancellation, AbortSignal.timeout(notifyTimeoutMs)]),
      });
      await response.body?.cancel();
    } catch (err) {
      if (cancellation.aborted) throw cancellation.reason;
      const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
      return failed(n, timedOut ? `no response within ${notifyTimeoutMs / 1000} s` : errorMessage(err), true);
    }
    if (!response.ok) return failed(n, `HTTP ${response.status}`, isRetryableStatus(response.status));

    await markNotificationDelivered(pool, n.id);
    notificationsTotal.inc({ type: n.type, outcome: 'delivered' });
    return 'delivered';
  }

  async function storedAlbum(workflowId: string, key: AlbumKey): Promise<AlbumView> {
    const album = await findAlbum(pool, key);
    if (!album) throw new Error(`album ${workflowId} is not stored`);
    return albumStatusFromDatabase(pool, album, key, albumProfileOf(album.source).childOrder);
  }

  async function albumWithMediaUrls(album: AlbumView): Promise<AlbumView> {
    const children = await Promise.all(album.children.map((child) => withMediaUrls(links, album.key.workspace, child)));
    return { ...album, children };
  }

  /** Sends one notification under its stable id; a retry or a replay delivers it at most once. */
  async function notify(input: NotifyInput): Promise<{ id: string; outcome: NotifyOutcome }> {
    const id = notificationId(input.workflowId, input.seq, input.type, input.notice, input.edit, input.unsent);
    // A withdrawal is told under its platform's word (LINE: unsent, Telegram: deleted), the child under the same key.
    const withdrawn = input.unsent && {
      change: input.unsent.change ?? 'unsent',
      messageId: input.unsent.messageId,
      withdrawnAt: input.unsent.withdrawnAt,
    };
    const updated = input.edit ? 'edited' : (withdrawn?.change ?? 'late_item');
    const change = input.type === 'album.updated' ? { change: updated } : {};
    const payload =
      input.type === 'message.ready'
        ? {
            id,
            type: input.type,
            message: {
              ...input.message,
              message: input.message.message && (await withMediaUrls(links, input.message.key.workspace, input.message.message)),
            },
            decision: input.decision,
          }
        : {
            id,
            type: input.type,
            ...change,
            album: await albumWithMediaUrls('album' in input ? input.album : await storedAlbum(input.workflowId, input.albumKey)),
            decision: input.decision,
            ...(input.edit ? { edit: input.edit } : {}),
            ...(withdrawn ? { [withdrawn.change]: { messageId: withdrawn.messageId, withdrawnAt: withdrawn.withdrawnAt } } : {}),
          };
    const body = JSON.stringify(payload);
    const attributes = { 'albumflow.notification.type': input.type, 'albumflow.decision.seq': input.seq };
    return inSpan('albumflow.notify', { attributes }, async (span) => {
      // An update an edit or a withdrawal caused is linked to the request that brought it.
      const change = input.edit ?? input.unsent;
      if (span.isRecording() && change) {
        const traceparent = await changeTraceparent(pool, input.workflowId, {
          messageId: change.messageId,
          ...(input.edit ? { version: input.edit.version } : {}),
        });
        if (traceparent) span.addLinks(linksTo([traceparent]));
      }
      const outcome = await send({ id, workflowId: input.workflowId, type: input.type, body });
      annotate(span, { 'albumflow.notification.outcome': outcome });
      return { id, outcome };
    });
  }

  return { notify };
}
