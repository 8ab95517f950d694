// The status bodies (docs/api.md, "Status"), built from normalized parts. The album workflow fills
// the parts from its state (status query, notifications); the HTTP layer fills them from PostgreSQL rows
// (messages + attachments + decisions + albums). Same parts, same body: the metadata review reasons are
// derived here from the children, so PostgreSQL's view has them before the workflow has seen the child.
// A workflow's answer that lacks stored children is completed from PostgreSQL's parts here too.

import { agreedTotal, analyzeMetadata, canonicalReasons, compareChildren } from './album-metadata.js';
import type {
  AlbumKey,
  AlbumPhase,
  AlbumProfile,
  AlbumView,
  AttachmentView,
  ChildArrival,
  ChildOrder,
  ChildRecord,
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
export type ChildWithOutcomes = Omit<ChildArrival, 'attachments'> & { attachments: AttachmentView[] };

export interface AlbumViewInput {
  workflowId: string;
  key: AlbumKey;
  /** Distinct children in any order. */
  children: ChildWithOutcomes[];
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
  state: AlbumPhase;
  /** Null until the message reached the workflow. */
  message: ChildView | null;
  decisions: DecisionView[];
  media: MediaSummary;
}

export interface MessageViewInput {
  workflowId: string;
  key: MessageKey;
  child: ChildWithOutcomes | null;
  decisions: DecisionView[];
  closed: boolean;
}

export function childWithOutcomesOf({ arrival, attachments }: ChildRecord): ChildWithOutcomes {
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
    ...(arrival.withdrawnAt ? { withdrawnAt: arrival.withdrawnAt } : {}),
  };
}

function normalizeInstant(value: string): string {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}

function stateOf(decisions: readonly DecisionView[], closed: boolean): AlbumPhase {
  if (closed) return 'closed';
  return decisions.length > 0 ? 'processed' : 'collecting';
}

function asReceived(meta: ChildWithOutcomes['albumMeta'], field: 'index' | 'total', usable: number | null): JsonValue | null {
  if (meta && field in meta) return meta[field] ?? null;
  return usable;
}

export function childView(child: ChildWithOutcomes): ChildView {
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
    ...(child.withdrawnAt ? { withdrawnAt: normalizeInstant(child.withdrawnAt) } : {}),
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
  children: readonly ChildWithOutcomes[],
  resolved: ReviewResolution | null,
): ReviewView {
  const reasons = canonicalReasons([...recorded, ...analyzeMetadata(children).reasons]);
  const standing = resolved !== null && reasons.every((reason) => recorded.includes(reason)) ? resolved : null;
  return { required: reasons.length > 0 && standing === null, reasons, ...(standing ? { resolved: standing } : {}) };
}

export function buildAlbumView(input: AlbumViewInput): AlbumView {
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

/** What the views read of an album run's state (its decision rules keep more). */
export interface AlbumRunState {
  children: readonly ChildRecord[];
  decisions: DecisionView[];
  reviewReasons: readonly ReviewReason[];
  reviewResolved: ReviewResolution | null;
  phase: AlbumPhase;
}

/** The album status body of a run whose state is `state` (its `status` query, its notifications). */
export function albumStatusOf(workflowId: string, key: AlbumKey, profile: AlbumProfile, state: AlbumRunState): AlbumView {
  return buildAlbumView({
    workflowId,
    key,
    children: state.children.map(childWithOutcomesOf),
    decisions: state.decisions,
    reviewReasons: state.reviewReasons,
    reviewResolved: state.reviewResolved,
    closed: state.phase === 'closed',
    childOrder: profile.childOrder,
  });
}

/** What PostgreSQL records of an album, as a workflow's answer is completed from it. */
export interface StoredAlbumParts {
  /** Every stored child of the album, in any order. */
  children: ChildWithOutcomes[];
  decisions: DecisionView[];
  /** `albums.review_reasons` and the resolution recorded with them. */
  reviewReasons: readonly ReviewReason[];
  reviewResolved: ReviewResolution | null;
}

/**
 * The stored children a workflow's answer lacks: those it does not show, those it shows at an earlier
 * version (a shorter history) than the one stored, and those with an attachment it shows unavailable
 * that a redelivery has since given a URL.
 */
export function unseenChildren(answer: AlbumView, stored: readonly ChildWithOutcomes[]): ChildWithOutcomes[] {
  const shown = new Map(answer.children.map((child) => [child.messageId, child]));
  return stored.filter((child) => {
    const answered = shown.get(child.messageId);
    if (answered === undefined || answered.history.length < child.history.length) return true;
    if (child.withdrawnAt !== undefined && answered.withdrawnAt === undefined) return true;
    // A redelivery brought a URL the workflow has not seen yet: stored, it is no longer unavailable.
    const unavailable = new Set(answered.attachments.filter((a) => a.status === 'unavailable').map((a) => a.position));
    return child.attachments.some((a) => a.status !== 'unavailable' && unavailable.has(a.position));
  });
}

function usableInteger(value: unknown, minimum: number): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= minimum ? value : null;
}

/**
 * A child of a workflow's answer as the builder reads it: as the answer shows it (its attachments'
 * live outcomes included), with the usable metadata of its stored row. A child without one (never
 * stored, or no longer) keeps the metadata its shown values give; the answer's reasons already hold
 * what its metadata flagged.
 */
function answeredChild(child: ChildView, stored: ChildWithOutcomes | undefined): ChildWithOutcomes {
  return {
    messageId: child.messageId,
    index: stored ? stored.index : usableInteger(child.index, 0),
    total: stored ? stored.total : usableInteger(child.total, 1),
    metadataInvalid: stored?.metadataInvalid ?? false,
    albumMeta: { index: child.index as JsonValue, total: child.total as JsonValue },
    caption: child.caption,
    sentAt: child.sentAt,
    receivedAt: child.receivedAt,
    attachments: child.attachments,
    history: child.history,
    ...(child.withdrawnAt ? { withdrawnAt: child.withdrawnAt } : {}),
  };
}

/**
 * A running workflow's answer completed with what PostgreSQL holds and the workflow has not seen yet
 * (children the dispatcher has not signalled, or everything while its first task loads the album): the
 * builder's body for the workflow's children with their live attachment outcomes plus the unseen stored
 * ones, the decisions of both (the workflow's win a seq both have), and the workflow's review — or the
 * recorded one while the workflow shows no child — with the reasons the metadata of them all gives.
 * It is the body PostgreSQL's view gives for the same children, and the answer itself when nothing is unseen.
 */
export function completedAlbumView(answer: AlbumView, stored: StoredAlbumParts, childOrder: ChildOrder): AlbumView {
  const unseen = unseenChildren(answer, stored.children);
  const replaced = new Set(unseen.map((child) => child.messageId));
  const rows = new Map(stored.children.map((child) => [child.messageId, child]));
  const answered = answer.children
    .filter((child) => !replaced.has(child.messageId))
    .map((child) => answeredChild(child, rows.get(child.messageId)));
  const decisions = new Map(stored.decisions.map((decision) => [decision.seq, decision]));
  for (const decision of answer.decisions) decisions.set(decision.seq, decision);
  const loaded = answer.children.length > 0;
  return buildAlbumView({
    workflowId: answer.workflowId,
    key: answer.key,
    children: [...answered, ...unseen],
    decisions: [...decisions.values()],
    reviewReasons: loaded ? answer.review.reasons : stored.reviewReasons,
    reviewResolved: loaded ? (answer.review.resolved ?? null) : stored.reviewResolved,
    closed: answer.state === 'closed',
    childOrder,
  });
}
