// What the album and message workflows ask of their activities: each activity's input and result. The
// worker's activities (activities/) implement this interface; workflow code proxies it. Types only.

import type { MessageWorkflowStatus } from '../src/domain/album-view.js';
import type {
  AlbumKey,
  AlbumView,
  ChildEdit,
  ChildWithdrawal,
  DecisionRecord,
  DecisionView,
  DownloadRequest,
  DownloadResult,
  LateItemPolicy,
  NotificationType,
  PriorAlbum,
  RecordedReview,
  ReviewReason,
  ReviewResolution,
  StoredScope,
} from '../src/domain/types.js';

export interface MarkClosedInput extends RecordedReview {
  workflowId: string;
}

/** The decision a notification is about; `album.updated` also names the late children and the policy applied. */
export interface NotifiedDecision extends DecisionView {
  lateChildMessageIds?: string[];
  lateItemPolicy?: LateItemPolicy;
}

type AlbumNotificationType = Exclude<NotificationType, 'message.ready'>;

export type NotifyInput = {
  workflowId: string;
  seq: number;
  decision: NotifiedDecision;
  /** For `album.media_settled`: 1 for the decision's first notice, 2 once its media settled again, … */
  notice?: number;
  /** For `album.updated` about an edit of a decided child; without it (or `unsent`), `album.updated` is about late items. */
  edit?: ChildEdit;
  /** For `album.updated` about a decided child that was withdrawn (`"change"`: `unsent.change`, by default `"unsent"`). */
  unsent?: ChildWithdrawal;
} & (
  | { type: AlbumNotificationType; album: AlbumView }
  /** An album body too large to pass through Temporal: the activity reads it from PostgreSQL. */
  | { type: AlbumNotificationType; albumKey: AlbumKey }
  | { type: 'message.ready'; message: MessageWorkflowStatus }
);

/** `recorded` for delivery now, or `already` by an earlier attempt. */
export type NotifyOutcome = 'recorded' | 'already';

/** One command of the album rules: a new decision to record and notify, or a later notification about a recorded one. */
export interface DecisionStep {
  type: AlbumNotificationType;
  decision: NotifiedDecision;
  /** Set for a new decision: it is stored, with the album's review, before its notification goes out. */
  record?: { reviewReasons: ReviewReason[]; reviewResolved: ReviewResolution | null };
  /** The n-th `album.media_settled` of its decision. */
  notice?: number;
  /** For `album.updated` about an edit of a decided child (`"change": "edited"`) rather than late items. */
  edit?: ChildEdit;
  /** For `album.updated` about a decided child that was withdrawn (`"change"`: `unsent.change`, by default `"unsent"`). */
  unsent?: ChildWithdrawal;
}

export interface RecordAndNotifyInput {
  workflowId: string;
  /** The album's status when the steps were taken, shared by all of them; its key when too large to pass. */
  body: { album: AlbumView } | { albumKey: AlbumKey };
  steps: DecisionStep[];
}

export interface DownloadInput {
  /** The attachments of one activity, each with its outcome at the same place of the result. */
  attachments: DownloadRequest[];
  /** The workflow's last retry attempt: a transient failure then is recorded as `failed` instead of retried. */
  finalAttempt: number;
}

/** Every activity the album and message workflows call. */
export interface WorkflowActivities {
  /** Stores one decision with the exact children it included; a retry or a replay never stores or counts it twice. */
  recordDecision: (input: DecisionRecord) => Promise<{ inserted: boolean }>;
  /** What a fresh run of an album (or standalone message) starts from. */
  loadPrior: (scope: StoredScope) => Promise<PriorAlbum>;
  markClosed: (input: MarkClosedInput) => Promise<void>;
  /** Sends one notification under its stable id; a retry or a replay delivers it at most once. */
  notify: (input: NotifyInput) => Promise<{ id: string; outcome: NotifyOutcome }>;
  /** Records and notifies, in order, what an album run decided in one step. */
  recordAndNotify: (input: RecordAndNotifyInput) => Promise<void>;
  /** Downloads a batch of attachments; each outcome at the place of its request. */
  downloadAttachments: (input: DownloadInput) => Promise<DownloadResult[]>;
}
