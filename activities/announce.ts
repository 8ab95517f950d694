import { ApplicationFailure } from '@temporalio/common';
import type { AlbumKey, AlbumStatus, NotificationType, ReviewReason } from '../workflows/types.js';
import type { NotifiedDecision, NotifyInput } from './publish.js';
import type { RecordDecisionInput } from './record.js';

/** A new decision to record and announce, or a later notification about a recorded one. */
export interface Announcement {
  type: Exclude<NotificationType, 'message.ready'>;
  decision: NotifiedDecision;
  /** Set for a new decision: it is stored, with the album's review reasons, before its notification goes out. */
  record?: { reviewReasons: ReviewReason[] };
}

export interface AnnounceInput {
  workflowId: string;
  /** The album's status when the announcements were made, shared by all of them; its key when too large to pass. */
  body: { album: AlbumStatus } | { albumKey: AlbumKey };
  announcements: Announcement[];
}

export interface RefusedNotification {
  type: Announcement['type'];
  seq: number;
  error: string;
}

export interface AnnounceResult {
  /** Notifications the receiver refused for good (marked `failed` in PostgreSQL); every other one went out. */
  refused: RefusedNotification[];
}

interface AnnounceDeps {
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
export function createAnnounceActivities({ recordDecision, notify }: AnnounceDeps) {
  async function announceDecisions({ workflowId, body, announcements }: AnnounceInput): Promise<AnnounceResult> {
    const refused: RefusedNotification[] = [];
    for (const { type, decision, record } of announcements) {
      if (record) await recordDecision({ workflowId, decision, album: record });
      try {
        await notify({ workflowId, seq: decision.seq, type, decision, ...body });
      } catch (err) {
        if (!(err instanceof ApplicationFailure && err.nonRetryable)) throw err;
        refused.push({ type, seq: decision.seq, error: err.message });
      }
    }
    return { refused };
  }

  return { announceDecisions };
}
