// The album decision rules of DESIGN.md §4 as a pure, deterministic state machine:
// step(state, event, timings) → { state, commands }. The album workflow drives it; it never reads
// the clock, never mutates its input, and everything it keeps is plain JSON (carried across
// continue-as-new).
//
// Decision membership: every decision includes the full set of distinct children known at the
// moment it is taken, ordered like the album view (usable index, then sentAt, then message id).
// A `late_item` decision therefore restates the whole album, and `late.childMessageIds` of its
// command names the children it adds to the previous decision.

import type {
  AlbumTimings,
  AttachmentView,
  ChildArrival,
  DecisionTrigger,
  DecisionView,
  DownloadResult,
  LateItemPolicy,
  ReviewReason,
} from './types.js';

export type AlbumPhase = 'collecting' | 'processed' | 'closed';

export interface ChildRecord {
  arrival: ChildArrival;
  attachments: AttachmentView[];
}

export interface AlbumRulesState {
  /** Distinct children, in the order they were first seen. */
  children: ChildRecord[];
  reviewReasons: ReviewReason[];
  decisions: DecisionView[];
  /** `processed` after the first decision; `closed` once the late window ended with nothing pending. */
  phase: AlbumPhase;
  /** When the first child that no decision includes yet arrived (ms); null when every child is decided. */
  firstUndecidedAt: number | null;
  /** When the latest new distinct child arrived (ms). */
  lastNewChildAt: number | null;
  lastDecisionAt: number | null;
  /** The decision whose `album.media_settled` was emitted (or found settled on restore). */
  mediaSettledSeq: number | null;
}

export type AlbumEvent =
  | { type: 'children_arrived'; now: number; children: ChildArrival[] }
  | { type: 'timer_fired'; now: number }
  | { type: 'download_settled'; messageId: string; position: number; result: DownloadResult };

export interface LateItems {
  /** The children this decision adds to the previous one. */
  childMessageIds: string[];
  policy: LateItemPolicy;
}

export type AlbumCommand =
  | { type: 'download'; messageId: string; position: number }
  /** Record the decision, then notify `album.ready` (first decision) or `album.updated` (late items). */
  | { type: 'decide'; decision: DecisionView; reviewReasons: ReviewReason[]; late: LateItems | null }
  | { type: 'media_settled'; decision: DecisionView };

export interface Transition {
  state: AlbumRulesState;
  commands: AlbumCommand[];
}

export type DeadlineKind = 'max_wait' | 'quiet_period' | 'late_item' | 'late_window';

export interface Deadline {
  kind: DeadlineKind;
  /** Milliseconds since the epoch. */
  at: number;
}

/** Everything PostgreSQL knows about an album when a fresh run starts. */
export interface PriorAlbum {
  decisions: DecisionView[];
  children: ChildRecord[];
  reviewReasons: ReviewReason[];
}

export const reviewReasonOrder: readonly ReviewReason[] = ['total_conflict', 'duplicate_index', 'invalid_metadata', 'late_item'];

export function canonicalReasons(reasons: Iterable<ReviewReason>): ReviewReason[] {
  const present = new Set(reasons);
  return reviewReasonOrder.filter((reason) => present.has(reason));
}

export interface OrderedChild {
  messageId: string;
  index: number | null;
  sentAt: string | null;
}

function instantOrNull(value: string | null): number | null {
  if (value === null) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

function compareNullsLast(a: number | null, b: number | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a - b;
}

/** Album order: usable index, then sentAt, then message id; missing values last. */
export function compareChildren(a: OrderedChild, b: OrderedChild): number {
  return (
    compareNullsLast(a.index, b.index) ||
    compareNullsLast(instantOrNull(a.sentAt), instantOrNull(b.sentAt)) ||
    (a.messageId < b.messageId ? -1 : a.messageId > b.messageId ? 1 : 0)
  );
}

/** The one total every child that carries a usable total agrees on; null when none or conflicting. */
export function agreedTotal(children: readonly { total: number | null }[]): number | null {
  const totals = distinctTotals(children);
  return totals.length === 1 ? totals[0]! : null;
}

function distinctTotals(children: readonly { total: number | null }[]): number[] {
  return [...new Set(children.flatMap((child) => (child.total === null ? [] : [child.total])))];
}

export interface MetadataAnalysis {
  agreedTotal: number | null;
  reasons: ReviewReason[];
  /** The total the count trigger may use: agreed and free of conflicts, duplicates and invalid metadata. */
  usableTotal: number | null;
}

export function analyzeMetadata(children: readonly ChildArrival[]): MetadataAnalysis {
  const total = agreedTotal(children);
  const reasons: ReviewReason[] = [];
  if (distinctTotals(children).length > 1 || (total !== null && children.length > total)) reasons.push('total_conflict');
  const indexes = children.flatMap((child) => (child.index === null ? [] : [child.index]));
  if (new Set(indexes).size < indexes.length) reasons.push('duplicate_index');
  if (children.some((child) => child.metadataInvalid)) reasons.push('invalid_metadata');
  return { agreedTotal: total, reasons, usableTotal: reasons.length === 0 ? total : null };
}

export function initialState(): AlbumRulesState {
  return {
    children: [],
    reviewReasons: [],
    decisions: [],
    phase: 'collecting',
    firstUndecidedAt: null,
    lastNewChildAt: null,
    lastDecisionAt: null,
    mediaSettledSeq: null,
  };
}

/** The attachments of a child as it arrives: those without a URL are `unavailable`, the rest `pending`. */
export function initialAttachments(arrival: ChildArrival): AttachmentView[] {
  return [...arrival.attachments]
    .sort((a, b) => a.position - b.position)
    .map((ref) => ({
      position: ref.position,
      status: ref.url === null ? 'unavailable' : 'pending',
      contentType: null,
      bytes: null,
      sha256: null,
      error: null,
    }));
}

export function settleAttachment(attachments: readonly AttachmentView[], position: number, result: DownloadResult): AttachmentView[] {
  return attachments.map((attachment) =>
    attachment.position === position && attachment.status === 'pending'
      ? { position, status: result.status, contentType: result.contentType, bytes: result.bytes, sha256: result.sha256, error: result.error }
      : attachment,
  );
}

export function latestDecision(state: AlbumRulesState): DecisionView | undefined {
  return state.decisions[state.decisions.length - 1];
}

/** A download command for every attachment still pending (after a restore or continue-as-new). */
export function pendingDownloads(state: AlbumRulesState): AlbumCommand[] {
  return state.children.flatMap((child) => downloadsOf(child));
}

function downloadsOf(child: ChildRecord): AlbumCommand[] {
  return child.attachments
    .filter((attachment) => attachment.status === 'pending')
    .map((attachment) => ({ type: 'download', messageId: child.arrival.messageId, position: attachment.position }));
}

/** When the workflow must wake next to let time-based rules act; null when only a new child can change anything. */
export function nextDeadline(state: AlbumRulesState, timings: AlbumTimings): Deadline | null {
  if (state.phase === 'collecting') {
    if (state.firstUndecidedAt === null || state.lastNewChildAt === null) return null;
    const maxWait: Deadline = { kind: 'max_wait', at: state.firstUndecidedAt + timings.maxWaitMs };
    if (analyzeMetadata(arrivals(state)).usableTotal !== null) return maxWait;
    const quiet: Deadline = { kind: 'quiet_period', at: state.lastNewChildAt + timings.quietPeriodMs };
    return quiet.at < maxWait.at ? quiet : maxWait;
  }
  if (state.phase === 'closed') return null;
  if (state.firstUndecidedAt !== null && state.lastNewChildAt !== null) {
    return {
      kind: 'late_item',
      at: Math.min(state.lastNewChildAt + timings.quietPeriodMs, state.firstUndecidedAt + timings.maxWaitMs),
    };
  }
  return { kind: 'late_window', at: (state.lastDecisionAt ?? 0) + timings.lateWindowMs };
}

export function step(state: AlbumRulesState, event: AlbumEvent, timings: AlbumTimings): Transition {
  switch (event.type) {
    case 'children_arrived':
      return addChildren(
        state,
        event.children.map((arrival) => ({ arrival, attachments: initialAttachments(arrival) })),
        event.now,
        timings,
      );
    case 'timer_fired':
      return evaluate(state, event.now, timings);
    case 'download_settled':
      return settleDownload(state, event.messageId, event.position, event.result);
  }
}

/**
 * The state a fresh run starts from: the children of earlier decisions are known, stored children
 * no decision includes arrive now (late when a decision exists), pending attachments are downloaded.
 */
export function restoreState(prior: PriorAlbum, now: number, timings: AlbumTimings): Transition {
  const decided = new Set(prior.decisions.flatMap((decision) => decision.childMessageIds));
  const known = prior.children.filter((child) => decided.has(child.arrival.messageId));
  const last = prior.decisions[prior.decisions.length - 1];
  const base: AlbumRulesState = {
    ...initialState(),
    children: known,
    decisions: prior.decisions,
    reviewReasons: canonicalReasons([...prior.reviewReasons, ...analyzeMetadata(known.map((child) => child.arrival)).reasons]),
    phase: last ? 'processed' : 'collecting',
    lastDecisionAt: last ? Date.parse(last.decidedAt) : null,
    mediaSettledSeq: last && mediaSettled(known, last) ? last.seq : null,
  };
  const undecided = prior.children.filter((child) => !decided.has(child.arrival.messageId));
  const next = undecided.length > 0 ? addChildren(base, undecided, now, timings) : evaluate(base, now, timings);
  return { state: next.state, commands: [...pendingDownloads(base), ...next.commands] };
}

function arrivals(state: AlbumRulesState): ChildArrival[] {
  return state.children.map((child) => child.arrival);
}

function addChildren(state: AlbumRulesState, incoming: readonly ChildRecord[], now: number, timings: AlbumTimings): Transition {
  const seen = new Set(state.children.map((child) => child.arrival.messageId));
  const fresh: ChildRecord[] = [];
  for (const child of incoming) {
    if (seen.has(child.arrival.messageId)) continue;
    seen.add(child.arrival.messageId);
    fresh.push(child);
  }
  if (fresh.length === 0) return { state, commands: [] };

  const children = [...state.children, ...fresh];
  const late = state.phase !== 'collecting';
  const reasons = [
    ...state.reviewReasons,
    ...analyzeMetadata(children.map((child) => child.arrival)).reasons,
    ...(late && timings.lateItemPolicy === 'review' ? (['late_item'] as const) : []),
  ];
  const next: AlbumRulesState = {
    ...state,
    children,
    reviewReasons: canonicalReasons(reasons),
    phase: late ? 'processed' : 'collecting',
    firstUndecidedAt: state.firstUndecidedAt ?? now,
    lastNewChildAt: now,
  };
  const evaluated = evaluate(next, now, timings);
  return { state: evaluated.state, commands: [...fresh.flatMap((child) => downloadsOf(child)), ...evaluated.commands] };
}

function evaluate(state: AlbumRulesState, now: number, timings: AlbumTimings): Transition {
  let current = state;
  const commands: AlbumCommand[] = [];
  for (;;) {
    const transition = dueTransition(current, now, timings);
    if (!transition) return { state: current, commands };
    current = transition.state;
    commands.push(...transition.commands);
  }
}

function dueTransition(state: AlbumRulesState, now: number, timings: AlbumTimings): Transition | null {
  if (state.phase === 'collecting' && state.children.length > 0) {
    const { usableTotal } = analyzeMetadata(arrivals(state));
    if (usableTotal !== null && state.children.length === usableTotal) return decide(state, 'expected_count_reached', now, timings);
  }
  const deadline = nextDeadline(state, timings);
  if (!deadline || deadline.at > now) return null;
  if (deadline.kind === 'late_window') return { state: { ...state, phase: 'closed' }, commands: [] };
  return decide(state, deadline.kind, now, timings);
}

function decide(state: AlbumRulesState, trigger: DecisionTrigger, now: number, timings: AlbumTimings): Transition {
  const previous = latestDecision(state);
  const childMessageIds = state.children
    .map((child) => child.arrival)
    .sort(compareChildren)
    .map((child) => child.messageId);
  const decision: DecisionView = {
    seq: (previous?.seq ?? 0) + 1,
    trigger,
    childMessageIds,
    decidedAt: new Date(now).toISOString(),
  };
  const before = new Set(previous?.childMessageIds ?? []);
  const late: LateItems | null =
    trigger === 'late_item'
      ? { childMessageIds: childMessageIds.filter((id) => !before.has(id)), policy: timings.lateItemPolicy }
      : null;
  const decided: AlbumRulesState = {
    ...state,
    decisions: [...state.decisions, decision],
    phase: 'processed',
    firstUndecidedAt: null,
    lastDecisionAt: now,
  };
  const settled = emitMediaSettled(decided);
  return {
    state: settled.state,
    commands: [{ type: 'decide', decision, reviewReasons: state.reviewReasons, late }, ...settled.commands],
  };
}

function settleDownload(state: AlbumRulesState, messageId: string, position: number, result: DownloadResult): Transition {
  const target = state.children.find((child) => child.arrival.messageId === messageId);
  if (!target?.attachments.some((attachment) => attachment.position === position && attachment.status === 'pending')) {
    return { state, commands: [] };
  }
  const children = state.children.map((child) =>
    child === target ? { ...child, attachments: settleAttachment(child.attachments, position, result) } : child,
  );
  return emitMediaSettled({ ...state, children });
}

function mediaSettled(children: readonly ChildRecord[], decision: DecisionView): boolean {
  const included = new Set(decision.childMessageIds);
  return children
    .filter((child) => included.has(child.arrival.messageId))
    .every((child) => child.attachments.every((attachment) => attachment.status !== 'pending'));
}

function emitMediaSettled(state: AlbumRulesState): Transition {
  const latest = latestDecision(state);
  if (!latest || state.mediaSettledSeq === latest.seq || !mediaSettled(state.children, latest)) return { state, commands: [] };
  return { state: { ...state, mediaSettledSeq: latest.seq }, commands: [{ type: 'media_settled', decision: latest }] };
}
