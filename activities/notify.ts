import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { annotate, inSpan, linksTo } from '../src/common/tracing.js';
import { changeTraceparent } from '../src/db/decisions.js';
import { mediaLinksFor } from '../src/media/links.js';
import { notificationBody } from '../src/notifications/notification.js';
import { createSender, NotificationNotDelivered, sendNotification } from '../src/notifications/send.js';
import type { NotifyInput, NotifyOutcome } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';

/** A receiver's refusal for good: the activity is not retried. */
function rejection(id: string, error: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`notification ${id} rejected: ${error}`, 'NotificationRejected');
}

export function createNotifyActivities(deps: ActivityDeps) {
  const { pool } = deps;
  const links = mediaLinksFor(deps.config, pool);
  const sender = createSender(pool, deps.logger, deps.config);

  /** Sends one notification under its stable id; a retry or a replay delivers it at most once. */
  async function notify(input: NotifyInput): Promise<{ id: string; outcome: NotifyOutcome }> {
    const { id, body } = await notificationBody(pool, links, input);
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
      let outcome: NotifyOutcome;
      try {
        outcome = await sendNotification(
          sender,
          { id, workflowId: input.workflowId, type: input.type, body },
          Context.current().cancellationSignal,
        );
      } catch (err) {
        if (!(err instanceof NotificationNotDelivered)) throw err;
        if (err.retryable) throw ApplicationFailure.retryable(`notification ${id}: ${err.message}`, 'NotificationDeliveryFailed');
        throw rejection(id, err.message);
      }
      annotate(span, { 'albumflow.notification.outcome': outcome });
      return { id, outcome };
    });
  }

  return { notify };
}
