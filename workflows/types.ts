// Types shared by the workflow, the activities, the dispatcher and the HTTP layer (and the one list
// of late-item policies that the configuration validates against). Types only, but for that list.

import type { AttachmentStatus, EarlierVersion } from '../src/http/schemas.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Scope shared by every identity of one conversation. */
export interface ConversationScope {
  workspace: string;
  provider: string;
  accountId: string;
  conversationId: string;
}

export interface AlbumKey extends ConversationScope {
  albumId: string;
}

export interface MessageKey extends ConversationScope {
  messageId: string;
}

// The status body and its parts are defined once, as the HTTP schemas (src/http/schemas.ts).
export type {
  AlbumState,
  AlbumStatus,
  AttachmentStatus,
  AttachmentView,
  ChildView,
  DecisionTrigger,
  DecisionView,
  EarlierVersion,
  MediaSummary,
  ReviewReason,
  ReviewResolution,
  ReviewView,
} from '../src/http/schemas.js';

export const lateItemPolicies = ['refresh', 'reanalyze', 'review'] as const;
export type LateItemPolicy = (typeof lateItemPolicies)[number];
export type NotificationType = 'album.ready' | 'album.updated' | 'album.media_settled' | 'message.ready';

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
}

/** The payload of the `children` signal: every pending child of one album the dispatcher found. */
export interface ChildrenBatch {
  children: ChildArrival[];
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

/** Arguments of `albumWorkflow` (one object, as Temporal recommends). */
export interface AlbumWorkflowInput {
  key: AlbumKey;
  timings: AlbumTimings;
  profile: AlbumProfile;
  /** State carried across continue-as-new; absent on a fresh start. Shape owned by the workflow. */
  carried?: JsonValue;
  /** Testing: continue-as-new after this many signals, so that path runs in tests. */
  continueAsNewAfterSignals?: number;
  /**
   * The cost baseline the bench compares against (TEMPORAL_COST_BASELINE): one download activity per
   * attachment instead of one per batch of them. Never set in production.
   */
  oneDownloadActivityPerAttachment?: boolean;
}

/** Arguments of `messageWorkflow`, the workflow of one standalone (album-less) message. */
export interface MessageWorkflowInput {
  key: MessageKey;
  timings: AlbumTimings;
  /** As in AlbumWorkflowInput. */
  oneDownloadActivityPerAttachment?: boolean;
}
