// The status bodies (docs/api.md, "Status"), built from normalized parts. The album workflow fills
// the parts from its state (status query, notifications); the HTTP layer fills them from PostgreSQL rows
// (messages + attachments + decisions + albums). Same parts, same body: the metadata review reasons are
// derived here from the children, so PostgreSQL's view has them before the workflow has seen the child.

import {
  agreedTotal,
  analyzeMetadata,
  canonicalReasons,
  compareChildren,
  type AlbumRulesState,
  type ChildOrder,
  type ChildRecord,
} from './album-rules.js';
import type {
  AlbumKey,
  AlbumProfile,
  AlbumState,
  AlbumStatus,
  AttachmentView,
  ChildArrival,
  ChildView,
  DecisionView,
  JsonValue,
  MediaSummary,
  MessageKey,
  ReviewReason,
  ReviewResolution,
  ReviewView,
} from './types.js';

/**
 * A child as the views read it: what arrived of it, with its attachments' outcomes instead of their
 * references. Any parsable instant (`sentAt`, `receivedAt`) is normalized to ISO 8601 in the view, so
 * PostgreSQL's and the workflow's print the same.
 */
export type ViewChild = Omit<ChildArrival, 'attachments'> & { attachments: AttachmentView[] };

export interface AlbumViewInput {
  workflowId: string;
  key: AlbumKey;
  /** Distinct children in any order. */
  children: ViewChild[];
  decisions: DecisionView[];
  /** The workflow's review reasons, or `albums.review_reasons`. */
  reviewReasons: readonly ReviewReason[];
  reviewResolved: ReviewResolution | null;
  /** The workflow ended its late window, or `albums.state = 'closed'`. */
  closed: boolean;
  /** The album profile's order of children. */
  childOrder: ChildOrder;
}

/** The status body of one standalone (album-less) message, answered by the message workflow's `status` query. */
export interface MessageWorkflowStatus {
  workflowId: string;
  key: MessageKey;
  state: AlbumState;
  /** Null until the message reached the workflow. */
  message: ChildView | null;
  decisions: DecisionView[];
  media: MediaSummary;
}

export interface MessageViewInput {
  workflowId: string;
  key: MessageKey;
  child: ViewChild | null;
  decisions: DecisionView[];
  closed: boolean;
}

export function viewChildOf({ arrival, attachments }: ChildRecord): ViewChild {
  return {
    messageId: arrival.messageId,
    index: arrival.index,
    total: arrival.total,
    metadataInvalid: arrival.metadataInvalid,
    albumMeta: arrival.albumMeta,
    caption: arrival.caption,
    sentAt: arrival.sentAt,
    receivedAt: arrival.receivedAt,
    attachments,
    history: arrival.history,
  };
}

function normalizeInstant(value: string): string {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}

function stateOf(decisions: readonly DecisionView[], closed: boolean): AlbumState {
  if (closed) return 'closed';
  return decisions.length > 0 ? 'processed' : 'collecting';
}

function asReceived(meta: ViewChild['albumMeta'], field: 'index' | 'total', usable: number | null): JsonValue | null {
  if (meta && field in meta) return meta[field] ?? null;
  return usable;
}

export function childView(child: ViewChild): ChildView {
  return {
    messageId: child.messageId,
    index: asReceived(child.albumMeta, 'index', child.index),
    total: asReceived(child.albumMeta, 'total', child.total),
    caption: child.caption,
    sentAt: child.sentAt === null ? null : normalizeInstant(child.sentAt),
    receivedAt: normalizeInstant(child.receivedAt),
    attachments: [...child.attachments].sort((a, b) => a.position - b.position),
    history: child.history.map((version) => ({
      caption: version.caption,
      mediaReplaced: version.mediaReplaced,
      replacedAt: normalizeInstant(version.replacedAt),
      recordedAt: normalizeInstant(version.recordedAt),
    })),
  };
}

function decisionView(decision: DecisionView): DecisionView {
  return {
    seq: decision.seq,
    trigger: decision.trigger,
    childMessageIds: [...decision.childMessageIds],
    decidedAt: normalizeInstant(decision.decidedAt),
  };
}

export function mediaSummary(attachments: readonly AttachmentView[]): MediaSummary {
  const summary: MediaSummary = { total: 0, pending: 0, downloaded: 0, failed: 0, expired: 0, unavailable: 0 };
  for (const attachment of attachments) {
    summary.total += 1;
    summary[attachment.status] += 1;
  }
  return summary;
}

/**
 * The review part of the body: the recorded reasons and those the children's metadata give. A resolution
 * stands only while no reason outside the recorded ones appeared (the rules clear it when one does).
 */
export function reviewView(
  recorded: readonly ReviewReason[],
  children: readonly ViewChild[],
  resolved: ReviewResolution | null,
): ReviewView {
  const reasons = canonicalReasons([...recorded, ...analyzeMetadata(children).reasons]);
  const standing = resolved !== null && reasons.every((reason) => recorded.includes(reason)) ? resolved : null;
  return { required: reasons.length > 0 && standing === null, reasons, ...(standing ? { resolved: standing } : {}) };
}

export function buildAlbumView(input: AlbumViewInput): AlbumStatus {
  const expectedTotal = agreedTotal(input.children);
  return {
    workflowId: input.workflowId,
    key: { ...input.key },
    state: stateOf(input.decisions, input.closed),
    expectedTotal,
    distinctChildren: input.children.length,
    expectedCountReached: expectedTotal !== null && input.children.length >= expectedTotal,
    review: reviewView(input.reviewReasons, input.children, input.reviewResolved),
    children: [...input.children].sort(compareChildren(input.childOrder)).map(childView),
    decisions: [...input.decisions].sort((a, b) => a.seq - b.seq).map(decisionView),
    media: mediaSummary(input.children.flatMap((child) => child.attachments)),
  };
}

export function buildMessageView(input: MessageViewInput): MessageWorkflowStatus {
  return {
    workflowId: input.workflowId,
    key: { ...input.key },
    state: stateOf(input.decisions, input.closed),
    message: input.child === null ? null : childView(input.child),
    decisions: [...input.decisions].sort((a, b) => a.seq - b.seq).map(decisionView),
    media: mediaSummary(input.child?.attachments ?? []),
  };
}

/** The album status body of a run whose rules are in `state` (its `status` query, its notifications). */
export function albumStatusOf(workflowId: string, key: AlbumKey, profile: AlbumProfile, state: AlbumRulesState): AlbumStatus {
  return buildAlbumView({
    workflowId,
    key,
    children: state.children.map(viewChildOf),
    decisions: state.decisions,
    reviewReasons: state.reviewReasons,
    reviewResolved: state.reviewResolved,
    closed: state.phase === 'closed',
    childOrder: profile.childOrder,
  });
}
