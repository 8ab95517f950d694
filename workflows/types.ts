// Types shared by the workflow, the activities, the dispatcher and the HTTP layer (and the one list
// of late-item policies that the configuration validates against). Types only, but for that list.

import type { AttachmentStatus } from '../src/http/schemas.js';

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

/** An attachment as stored with its child; `url` may be absent (file too large for the platform). */
export interface AttachmentRef {
  position: number;
  url: string | null;
  mimeType: string | null;
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
}

/** The payload of the `children` signal: every pending child of one album the dispatcher found. */
export interface ChildrenBatch {
  children: ChildArrival[];
}

/** Outcome of one download attempt sequence, as the download activity reports it. */
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
  /** State carried across continue-as-new; absent on a fresh start. Shape owned by the workflow. */
  carried?: JsonValue;
  /** Testing: continue-as-new after this many signals, so that path runs in tests. */
  continueAsNewAfterSignals?: number;
}

/** Arguments of `messageWorkflow`, the workflow of one standalone (album-less) message. */
export interface MessageWorkflowInput {
  key: MessageKey;
  timings: AlbumTimings;
}
