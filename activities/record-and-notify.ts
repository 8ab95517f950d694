import { recordDecisionAndNotification, recordNotification } from '../src/db/deliveries.js';
import type { Pool } from '../src/db/pool.js';
import type { RecordAndNotifyInput } from '../workflows/activity-types.js';
import type { createDecisionActivities } from './decisions.js';
import type { createNotifyActivities } from './notify.js';

interface RecordAndNotifyDeps {
  pool: Pool;
  recording: ReturnType<typeof createDecisionActivities>['recording'];
  recordingNotification: ReturnType<typeof createNotifyActivities>['recordingNotification'];
}

/**
 * Records, in order, what an album run decided in one step: each new decision with its notification in
 * one statement (neither is stored without the other), then the notifications about decisions recorded
 * before (`album.media_settled`, edits, withdrawals). Outbound delivery sends them; the run goes on at once.
 * One activity instead of one per record and per notification: each regular activity costs the server a
 * task queue round trip, three history events and a workflow task. A retry repeats nothing that took
 * effect: decisions are idempotent by (workflow id, seq), notifications by their stable id.
 */
export function createRecordAndNotifyActivities({ pool, recording, recordingNotification }: RecordAndNotifyDeps) {
  async function recordAndNotify({ workflowId, body, steps }: RecordAndNotifyInput): Promise<void> {
    for (const { type, decision, record, notice, edit, unsent } of steps) {
      const input = {
        workflowId,
        seq: decision.seq,
        type,
        decision,
        ...(notice !== undefined ? { notice } : {}),
        ...(edit ? { edit } : {}),
        ...(unsent ? { unsent } : {}),
        ...body,
      };
      if (!record) {
        await recordingNotification(input, (notification) => recordNotification(pool, notification));
        continue;
      }
      const decided = { workflowId, decision, album: record };
      await recording(decided, async () => {
        const { stored } = await recordingNotification(
          input,
          (notification) => recordDecisionAndNotification(pool, decided, notification),
          decision,
        );
        return { decided: stored.decided };
      });
    }
  }

  return { recordAndNotify };
}
