import { notificationsTotal } from '../src/common/metrics.js';
import { annotate, inSpan, linksTo, sampledSpanContext, traceparentOf } from '../src/common/tracing.js';
import { changeTraceparent } from '../src/db/decisions.js';
import { recordNotification, type NotificationToRecord, type RecordedNotification } from '../src/db/deliveries.js';
import type { DecisionView } from '../src/domain/types.js';
import { notificationOf } from '../src/delivery/notification.js';
import type { NotifyInput, NotifyOutcome } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';

/**
 * Notifications are recorded, never sent here: outbound delivery (src/delivery/) sends each to every endpoint
 * subscribed when it was recorded, retries it on its own schedule and never holds an album's workflow.
 */
export function createNotifyActivities({ pool }: ActivityDeps) {
  /**
   * The notification of `input`, recorded by `record` (in the statement that records its decision, when it
   * has one) in a span that each delivery attempt continues.
   */
  async function recordingNotification<Recorded extends RecordedNotification>(
    input: NotifyInput,
    record: (notification: NotificationToRecord) => Promise<Recorded>,
    deciding?: DecisionView,
  ): Promise<{ id: string; outcome: NotifyOutcome; stored: Recorded }> {
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
      const notification = await notificationOf(pool, input, new Date(), deciding);
      const spanContext = sampledSpanContext();
      const stored = await record(spanContext ? { ...notification, traceparent: traceparentOf(spanContext) } : notification);
      const outcome: NotifyOutcome = stored.recorded ? 'recorded' : 'already';
      notificationsTotal.inc({ type: input.type, outcome });
      annotate(span, { 'albumflow.notification.outcome': outcome });
      return { id: notification.id, outcome, stored };
    });
  }

  /** Records one notification under its stable id; a retry or a replay records it once. */
  async function notify(input: NotifyInput): Promise<{ id: string; outcome: NotifyOutcome }> {
    const { id, outcome } = await recordingNotification(input, (notification) => recordNotification(pool, notification));
    return { id, outcome };
  }

  return { notify, recordingNotification };
}
