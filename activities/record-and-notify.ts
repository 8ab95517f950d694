import { ApplicationFailure } from '@temporalio/common';
import type { AlbumKey, AlbumView, ChildEdit, NotificationType, ReviewReason, ReviewResolution } from '../src/domain/types.js';
import type { RecordDecisionInput } from './decisions.js';
import type { NotifiedDecision, NotifyInput } from './notify.js';

/** One command of the album rules: a new decision to record and notify, or a later notification about a recorded one. */
export interface DecisionStep {
  type: Exclude<NotificationType, 'message.ready'>;
  decision: NotifiedDecision;
  /** Set for a new decision: it is stored, with the album's review, before its notification goes out. */
  record?: { reviewReasons: ReviewReason[]; reviewResolved: ReviewResolution | null };
  /** The n-th `album.media_settled` of its decision. */
  notice?: number;
  /** For `album.updated` about an edit of a decided child (`"change": "edited"`) rather than late items. */
  edit?: ChildEdit;
}

export interface RecordAndNotifyInput {
  workflowId: string;
  /** The album's status when the steps were taken, shared by all of them; its key when too large to pass. */
  body: { album: AlbumView } | { albumKey: AlbumKey };
  steps: DecisionStep[];
}

export interface RefusedNotification {
  type: DecisionStep['type'];
  seq: number;
  error: string;
}

export interface RecordAndNotifyResult {
  /** Notifications the receiver refused for good (marked `failed` in PostgreSQL); every other one went out. */
  refused: RefusedNotification[];
}

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
    for (const { type, decision, record, notice, edit } of steps) {
      if (record) await recordDecision({ workflowId, decision, album: record });
      try {
        await notify({
          workflowId,
          seq: decision.seq,
          type,
          decision,
          ...(notice !== undefined ? { notice } : {}),
          ...(edit ? { edit } : {}),
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
