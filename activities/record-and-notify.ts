import { ApplicationFailure } from '@temporalio/common';
import type {
  NotifyInput,
  RecordAndNotifyInput,
  RecordAndNotifyResult,
  RecordDecisionInput,
  RefusedNotification,
} from '../workflows/activity-types.js';

interface RecordAndNotifyDeps {
  recordDecision: (input: RecordDecisionInput) => Promise<unknown>;
  notify: (input: NotifyInput) => Promise<unknown>;
}

/**
 * Carries out, in order, what an album run decided in one step: each decision is recorded before its
 * notification, and `album.media_settled` follows when the media were already settled. One activity
 * instead of one per record and per notification: each regular activity costs the server a task queue
 * round trip, three history events and a workflow task. A retry repeats nothing that took effect: records
 * are idempotent by (workflow id, seq), notifications by their stable id.
 */
export function createRecordAndNotifyActivities({ recordDecision, notify }: RecordAndNotifyDeps) {
  async function recordAndNotify({ workflowId, body, steps }: RecordAndNotifyInput): Promise<RecordAndNotifyResult> {
    const refused: RefusedNotification[] = [];
    for (const { type, decision, record, notice, edit, unsent } of steps) {
      if (record) await recordDecision({ workflowId, decision, album: record });
      try {
        await notify({
          workflowId,
          seq: decision.seq,
          type,
          decision,
          ...(notice !== undefined ? { notice } : {}),
          ...(edit ? { edit } : {}),
          ...(unsent ? { unsent } : {}),
          ...body,
        });
      } catch (err) {
        if (!(err instanceof ApplicationFailure && err.nonRetryable)) throw err;
        refused.push({ type, seq: decision.seq, error: err.message });
      }
    }
    return { refused };
  }

  return { recordAndNotify };
}
