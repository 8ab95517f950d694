// The domain's types: children, their attachments, albums, decisions and their views, as every layer
// (the ingress, PostgreSQL's queries, the dispatcher, the workflows, the activities, the console) names
// them. Types only, but for the one list of late-item policies that the configuration validates against.

import type {
  AlbumKey,
  AttachmentStatus,
  AttachmentView,
  DecisionView,
  EarlierVersion,
  MessageKey,
  ReviewReason,
  ReviewResolution,
} from './schemas.js';

export type {
  AlbumKey,
  AlbumPhase,
  AlbumView,
  AttachmentStatus,
  AttachmentView,
  ChildView,
  ConversationScope,
  DecisionTrigger,
  DecisionView,
  EarlierVersion,
  MediaSummary,
  MessageKey,
  ReviewReason,
  ReviewResolution,
  ReviewView,
} from './schemas.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * Where a webhook came from: the name of the platform (src/platforms/) whose route received it, the
 * `source` of its event id's scope (events table) and of its album.
 */
export type EventSource = string;

export const lateItemPolicies = ['refresh', 'reanalyze', 'review'] as const;
export type LateItemPolicy = (typeof lateItemPolicies)[number];
/**
 * Every type a notification may have (what an endpoint subscribes to, what the feed filters by): the album
 * workflows send the first four, an erasure the other two.
 */
export const notificationTypes = [
  'album.ready',
  'album.updated',
  'album.media_settled',
  'message.ready',
  'album.erased',
  'message.erased',
] as const;
export type NotificationType = (typeof notificationTypes)[number];

export function isNotificationType(text: string): text is NotificationType {
  return (notificationTypes as readonly string[]).includes(text);
}

export interface AlbumTimings {
  quietPeriodMs: number;
  maxWaitMs: number;
  lateWindowMs: number;
  lateItemPolicy: LateItemPolicy;
}

/**
 * An attachment as stored with its child; `url` may be absent (file too large for the platform). A
 * Telegram file never has one: it is downloaded by its file id.
 */
export interface AttachmentRef {
  position: number;
  url: string | null;
  mimeType: string | null;
  /** The Telegram file's `file_unique_id`; null for anything but Telegram media. */
  telegramFileUniqueId: string | null;
  /** LINE content: the channel whose token downloads it from the content API; absent for anything else. */
  lineChannel?: string;
}

/**
 * What the platform of an album promises about it, carried in the workflow input so that the rules
 * never look at a provider name.
 */
export interface AlbumProfile {
  /** An album holds at most this many children (Telegram: 10): it is decided (`album_full`) once that many are present. Null: no limit. */
  maxChildren: number | null;
  /**
   * How children are ordered: `index` — usable index, then sentAt, then message id; `message_id` —
   * message ids as numbers (Telegram's grow within a chat), then sentAt.
   */
  childOrder: 'index' | 'message_id';
}

export type ChildOrder = AlbumProfile['childOrder'];

/** A decision as it is recorded: which album (or standalone message) it decided, and the review it leaves. */
export interface DecisionRecord {
  workflowId: string;
  decision: DecisionView;
  /** The album's review at the decision; null for a standalone message (no albums row). */
  album: RecordedReview | null;
}

/** One edit of a child that some decision included, as the workflow notifies it with `album.updated` (`"change": "edited"`). */
export interface ChildEdit {
  messageId: string;
  /** 1 for the message's first edit, 2 for its second, … */
  version: number;
  caption: string | null;
  previousCaption: string | null;
  mediaReplaced: boolean;
}

/**
 * One committed child message as the dispatcher hands it to its workflow. `index` and `total` are the
 * usable values (non-negative integers) or null; `albumMeta` keeps the album object as received.
 */
export interface ChildArrival {
  messageId: string;
  index: number | null;
  total: number | null;
  /** `index` or `total` was present but of the wrong type, negative or fractional. */
  metadataInvalid: boolean;
  albumMeta: { index?: JsonValue; total?: JsonValue } | null;
  caption: string | null;
  sentAt: string | null;
  /** When the child was first stored (ISO 8601). */
  receivedAt: string;
  attachments: AttachmentRef[];
  /** Versions that edits replaced, oldest first: a longer history is a newer version of the child. */
  history: EarlierVersion[];
  /**
   * When the message was withdrawn (LINE's `unsend`, Telegram's `deleted_business_messages`); absent while
   * it is not. The child is kept.
   */
  withdrawnAt?: string;
  /** How it was withdrawn, with `withdrawnAt`; absent from children withdrawn before Bot API 10 (LINE's: unsent). */
  withdrawal?: WithdrawalChange;
}

/**
 * How a message was withdrawn, in its platform's word, which is the `change` of the `album.updated` that
 * announces it: `unsent` by its sender (LINE's `unsend`), `deleted` from a connected business account
 * (Telegram's `deleted_business_messages`).
 */
export type WithdrawalChange = 'unsent' | 'deleted';

/** A decided child that was withdrawn, as the workflow notifies it with `album.updated` (`"change": "unsent"` or `"deleted"`). */
export interface ChildWithdrawal {
  messageId: string;
  withdrawnAt: string;
  /** Absent for `unsent` (every withdrawal before Bot API 10 was LINE's `unsend`). */
  change?: WithdrawalChange;
}

/** A child with its attachments' outcomes, as a run keeps it and as PostgreSQL gives it back. */
export interface ChildRecord {
  arrival: ChildArrival;
  attachments: AttachmentView[];
}

/** One attachment a download activity is asked for. */
export interface DownloadRequest {
  key: MessageKey;
  position: number;
  /** An operator's retry: an attachment PostgreSQL still records as failed or expired is tried again. */
  retry: boolean;
}

/** Outcome of one attachment's download attempts, as the download activity reports it. */
export interface DownloadResult {
  status: Exclude<AttachmentStatus, 'pending'>;
  contentType: string | null;
  bytes: number | null;
  sha256: string | null;
  error: string | null;
}

/** An album's review as its workflow records it with a decision and when it closes. */
export interface RecordedReview {
  reviewReasons: ReviewReason[];
  reviewResolved: ReviewResolution | null;
}

/** Whose stored state a fresh run loads: an album's, or one standalone message's. */
export type StoredScope = { kind: 'album'; key: AlbumKey } | { kind: 'message'; key: MessageKey };

/** Everything PostgreSQL knows about an album (or a standalone message) when a fresh run starts. */
export interface PriorAlbum {
  decisions: DecisionView[];
  children: ChildRecord[];
  reviewReasons: ReviewReason[];
  reviewResolved: ReviewResolution | null;
  /** `album.media_settled` notices already sent for the latest decision. */
  mediaSettledNotices: number;
  /** By message id, the last version whose edit an `album.updated` notified. */
  editNotices: Record<string, number>;
  /** The message ids whose withdrawal an `album.updated` notified (absent from runs before LINE). */
  unsentNotices?: string[];
  /** The last decision seq of an earlier album under this workflow id that a purge removed (absent when there was none). */
  seqFloor?: number;
}
