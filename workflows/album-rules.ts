// The album decision rules (docs/design.md, "When an album is decided") as a pure, deterministic state machine:
// step(state, event, timings, profile) → { state, commands }. The album workflow drives it; it never reads
// the clock, never mutates its input, and everything it keeps is plain JSON (carried across
// continue-as-new).
//
// Decision membership: every decision includes the full set of distinct children known at the
// moment it is taken, ordered like the album view (by the album profile's child order).
// A `late_item` decision therefore restates the whole album, and `late.childMessageIds` of its
// command names the children it adds to the previous decision.

import { analyzeMetadata, canonicalReasons, compareChildren } from '../src/domain/album-metadata.js';
import type {
  AlbumPhase,
  AlbumProfile,
  AlbumTimings,
  AttachmentRef,
  AttachmentView,
  ChildArrival,
  ChildEdit,
  ChildRecord,
  ChildWithdrawal,
  DecisionTrigger,
  DecisionView,
  DownloadResult,
  LateItemPolicy,
  PriorAlbum,
  ReviewReason,
  ReviewResolution,
} from '../src/domain/types.js';

/** The `album.media_settled` notices sent for one decision. */
export interface MediaSettledNotices {
  seq: number;
  /** Notices sent for that decision: a second one follows when an attachment went back to pending. */
  sent: number;
  /** An attachment of that decision went back to pending after the last notice. */
  reopened: boolean;
}

export interface DecisionRulesState {
  /** Distinct children, in the order they were first seen. */
  children: ChildRecord[];
  reviewReasons: ReviewReason[];
  /** An operator resolved the review; cleared when a new reason (or a late item under `review`) flags it again. */
  reviewResolved: ReviewResolution | null;
  decisions: DecisionView[];
  /** `processed` after the first decision; `closed` once the late window ended with nothing pending. */
  phase: AlbumPhase;
  /** When the first child that no decision includes yet arrived (ms); null when every child is decided. */
  firstUndecidedAt: number | null;
  /** When the latest new distinct child arrived (ms). */
  lastNewChildAt: number | null;
  lastDecisionAt: number | null;
  /** The notices of the latest decision whose media settled (or found settled on restore). */
  mediaSettled: MediaSettledNotices | null;
  /** The last decision seq of an earlier album under this workflow id that a purge removed: decisions number after it. */
  seqFloor?: number;
}

export type AlbumEvent =
  | { type: 'children_arrived'; now: number; children: ChildArrival[] }
  | { type: 'timer_fired'; now: number }
  | { type: 'download_settled'; messageId: string; position: number; result: DownloadResult }
  /** An operator asked for every failed or expired attachment to be tried again. */
  | { type: 'downloads_retried' }
  | { type: 'review_resolved'; now: number; note: string };

export interface LateItems {
  /** The children this decision adds to the previous one. */
  childMessageIds: string[];
  policy: LateItemPolicy;
}

export type AlbumCommand =
  /** `retry`: an operator asked for it; the attempt starts over even where PostgreSQL still says failed or expired. */
  | { type: 'download'; messageId: string; position: number; retry: boolean }
  /** Record the decision, then notify `album.ready` (first decision) or `album.updated` (late items). */
  | {
      type: 'decide';
      decision: DecisionView;
      reviewReasons: ReviewReason[];
      reviewResolved: ReviewResolution | null;
      late: LateItems | null;
    }
  /** Notify `album.updated` (`"change": "edited"`): a child of `decision` was edited. */
  | { type: 'edited'; decision: DecisionView; edit: ChildEdit }
  /** Notify `album.updated` (`"change": "unsent"` or `"deleted"`, as `unsent.change` says): a child of `decision` was withdrawn. */
  | { type: 'unsent'; decision: DecisionView; unsent: ChildWithdrawal }
  /** `notice`: 1 for the first `album.media_settled` of the decision, 2 after its media settled again, … */
  | { type: 'media_settled'; decision: DecisionView; notice: number };

export interface Transition {
  state: DecisionRulesState;
  commands: AlbumCommand[];
}

export type DeadlineKind = 'max_wait' | 'quiet_period' | 'late_item' | 'late_window';

export interface Deadline {
  kind: DeadlineKind;
  /** Milliseconds since the epoch. */
  at: number;
}

export function initialState(): DecisionRulesState {
  return {
    children: [],
    reviewReasons: [],
    reviewResolved: null,
    decisions: [],
    phase: 'collecting',
    firstUndecidedAt: null,
    lastNewChildAt: null,
    lastDecisionAt: null,
    mediaSettled: null,
  };
}

/** The attachments of a child as it arrives: those with nothing to download from (no URL, no Telegram file, no LINE content) are `unavailable`, the rest `pending`. */
export function initialAttachments(arrival: ChildArrival): AttachmentView[] {
  return [...arrival.attachments].sort((a, b) => a.position - b.position).map(initialAttachment);
}

function initialAttachment(ref: AttachmentRef): AttachmentView {
  const downloadable = ref.url !== null || ref.telegramFileUniqueId !== null || ref.lineChannel !== undefined;
  return {
    position: ref.position,
    status: downloadable ? 'pending' : 'unavailable',
    contentType: null,
    bytes: null,
    sha256: null,
    error: null,
  };
}

export function settleAttachment(attachments: readonly AttachmentView[], position: number, result: DownloadResult): AttachmentView[] {
  return attachments.map((attachment) =>
    attachment.position === position && attachment.status === 'pending'
      ? {
          position,
          status: result.status,
          contentType: result.contentType,
          bytes: result.bytes,
          sha256: result.sha256,
          error: result.error,
        }
      : attachment,
  );
}

export function latestDecision(state: DecisionRulesState): DecisionView | undefined {
  return state.decisions[state.decisions.length - 1];
}

/** A download command for every attachment still pending (after a restore or continue-as-new). */
export function pendingDownloads(state: DecisionRulesState): AlbumCommand[] {
  return state.children.flatMap((child) => downloadsOf(child));
}

function downloadsOf(child: ChildRecord, positions?: ReadonlySet<number>, retry = false): AlbumCommand[] {
  return child.attachments
    .filter((attachment) => attachment.status === 'pending' && (!positions || positions.has(attachment.position)))
    .map((attachment) => ({ type: 'download', messageId: child.arrival.messageId, position: attachment.position, retry }));
}

/** When the workflow must wake next to let time-based rules act; null when only a new child can change anything. */
export function nextDeadline(state: DecisionRulesState, timings: AlbumTimings): Deadline | null {
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

export function step(state: DecisionRulesState, event: AlbumEvent, timings: AlbumTimings, profile: AlbumProfile): Transition {
  switch (event.type) {
    case 'children_arrived':
      return addChildren(
        state,
        event.children.map((arrival) => ({ arrival, attachments: initialAttachments(arrival) })),
        event.now,
        timings,
        profile,
      );
    case 'timer_fired':
      return evaluate(state, event.now, timings, profile);
    case 'download_settled':
      return settleDownload(state, event.messageId, event.position, event.result);
    case 'downloads_retried':
      return retryDownloads(state);
    case 'review_resolved':
      return { state: { ...state, reviewResolved: { at: new Date(event.now).toISOString(), note: event.note } }, commands: [] };
  }
}

/** Whether the album waits in the review queue: it has a reason and no operator resolved it since. */
export function reviewRequired(state: Pick<DecisionRulesState, 'reviewReasons' | 'reviewResolved'>): boolean {
  return state.reviewReasons.length > 0 && state.reviewResolved === null;
}

/** Attachments an operator may ask to try again. */
export function retryable(attachment: AttachmentView): boolean {
  return attachment.status === 'failed' || attachment.status === 'expired';
}

/**
 * The state a fresh run starts from: the children of earlier decisions are known, stored children
 * no decision includes arrive now (late when a decision exists), pending attachments are downloaded,
 * and edits of decided children stored after the latest decision that no run notified are notified.
 */
export function restoreState(prior: PriorAlbum, now: number, timings: AlbumTimings, profile: AlbumProfile): Transition {
  const decided = new Set(prior.decisions.flatMap((decision) => decision.childMessageIds));
  const known = prior.children.filter((child) => decided.has(child.arrival.messageId));
  const last = prior.decisions[prior.decisions.length - 1];
  const base: DecisionRulesState = {
    ...initialState(),
    children: known,
    decisions: prior.decisions,
    reviewReasons: canonicalReasons([...prior.reviewReasons, ...analyzeMetadata(known.map((child) => child.arrival)).reasons]),
    reviewResolved: prior.reviewResolved,
    phase: last ? 'processed' : 'collecting',
    lastDecisionAt: last ? Date.parse(last.decidedAt) : null,
    mediaSettled:
      last && prior.mediaSettledNotices > 0
        ? { seq: last.seq, sent: prior.mediaSettledNotices, reopened: !mediaSettled(known, last) }
        : null,
    ...(prior.seqFloor !== undefined ? { seqFloor: prior.seqFloor } : {}),
  };
  const unnotifiedEdits: AlbumCommand[] = last
    ? known.flatMap((child) =>
        editsOf(child.arrival, prior.editNotices[child.arrival.messageId] ?? 0)
          .filter((edit) => Date.parse(child.arrival.history[edit.version - 1]!.recordedAt) > Date.parse(last.decidedAt))
          .map((edit): AlbumCommand => ({ type: 'edited', decision: last, edit })),
      )
    : [];
  const notifiedWithdrawals = new Set(prior.unsentNotices ?? []);
  const unnotifiedWithdrawals: AlbumCommand[] = last
    ? known.flatMap(({ arrival }) =>
        arrival.withdrawnAt !== undefined &&
        !notifiedWithdrawals.has(arrival.messageId) &&
        Date.parse(arrival.withdrawnAt) > Date.parse(last.decidedAt)
          ? [{ type: 'unsent', decision: last, unsent: withdrawalOf(arrival, arrival.withdrawnAt) } as const]
          : [],
      )
    : [];
  const undecided = prior.children.filter((child) => !decided.has(child.arrival.messageId));
  const next = undecided.length > 0 ? addChildren(base, undecided, now, timings, profile) : evaluate(base, now, timings, profile);
  const settled = emitMediaSettled(next.state);
  return {
    state: settled.state,
    commands: [...pendingDownloads(base), ...unnotifiedEdits, ...unnotifiedWithdrawals, ...next.commands, ...settled.commands],
  };
}

function arrivals(state: DecisionRulesState): ChildArrival[] {
  return state.children.map((child) => child.arrival);
}

/**
 * A redelivered child as the latest delivery completes it: a caption or sent time it lacked, and each
 * attachment it lacked a URL for (the attachment goes from `unavailable` to `pending`) or did not have
 * at all. Null when the redelivery brings nothing new.
 */
function completedBy(known: ChildRecord, redelivery: ChildArrival): { record: ChildRecord; positions: Set<number> } | null {
  const positions = new Set<number>();
  const refs = new Map(known.arrival.attachments.map((ref) => [ref.position, ref]));
  const attachments = new Map(known.attachments.map((attachment) => [attachment.position, attachment]));
  for (const ref of redelivery.attachments) {
    const had = refs.get(ref.position);
    if (had && (had.url !== null || ref.url === null)) continue;
    refs.set(ref.position, had ? { ...had, url: ref.url, mimeType: had.mimeType ?? ref.mimeType } : ref);
    const current = attachments.get(ref.position);
    if (!current || current.status === 'unavailable') {
      attachments.set(ref.position, initialAttachment(ref));
      if (ref.url !== null) positions.add(ref.position);
    }
  }
  const caption = known.arrival.caption ?? redelivery.caption;
  const sentAt = known.arrival.sentAt ?? redelivery.sentAt;
  const unchanged =
    refs.size === known.arrival.attachments.length &&
    positions.size === 0 &&
    attachments.size === known.attachments.length &&
    caption === known.arrival.caption &&
    sentAt === known.arrival.sentAt &&
    [...refs.values()].every((ref, i) => ref === known.arrival.attachments[i]);
  if (unchanged) return null;
  const byPosition = <T extends { position: number }>(map: Map<number, T>) => [...map.values()].sort((a, b) => a.position - b.position);
  return {
    record: { arrival: { ...known.arrival, caption, sentAt, attachments: byPosition(refs) }, attachments: byPosition(attachments) },
    positions,
  };
}

/** The edits from version `after` + 1 on that a child's history records, each with the caption it set and the one it replaced. */
function editsOf(arrival: ChildArrival, after: number): ChildEdit[] {
  const { history } = arrival;
  return history.slice(after).map((replaced, i) => {
    const version = after + i + 1;
    return {
      messageId: arrival.messageId,
      version,
      caption: version < history.length ? history[version]!.caption : arrival.caption,
      previousCaption: replaced.caption,
      mediaReplaced: replaced.mediaReplaced,
    };
  });
}

/**
 * A known child as a newer version of it (a longer history) leaves it: its caption, history and
 * attachment refs; each attachment whose file changed starts over (pending, downloaded again).
 */
function editedBy(known: ChildRecord, edited: ChildArrival): { record: ChildRecord; positions: Set<number> } {
  const refs = new Map(known.arrival.attachments.map((ref) => [ref.position, ref]));
  const views = new Map(known.attachments.map((attachment) => [attachment.position, attachment]));
  const positions = new Set<number>();
  const attachments = [...edited.attachments]
    .sort((a, b) => a.position - b.position)
    .map((ref) => {
      const had = refs.get(ref.position);
      const view = views.get(ref.position);
      if (view && had && had.url === ref.url && had.telegramFileUniqueId === ref.telegramFileUniqueId) return view;
      const fresh = initialAttachment(ref);
      if (fresh.status === 'pending') positions.add(ref.position);
      return fresh;
    });
  return {
    record: {
      arrival: { ...known.arrival, caption: edited.caption, history: edited.history, attachments: edited.attachments },
      attachments,
    },
    positions,
  };
}

/**
 * A withdrawn child as its notification names it, with the word of how it was withdrawn; an arrival
 * without one (signalled before Bot API 10: LINE's unsend) names none, and is notified as `unsent`.
 */
function withdrawalOf(arrival: ChildArrival, withdrawnAt: string): ChildWithdrawal {
  return { messageId: arrival.messageId, withdrawnAt, ...(arrival.withdrawal ? { change: arrival.withdrawal } : {}) };
}

function addChildren(
  state: DecisionRulesState,
  incoming: readonly ChildRecord[],
  now: number,
  timings: AlbumTimings,
  profile: AlbumProfile,
): Transition {
  const index = new Map(state.children.map((child, i) => [child.arrival.messageId, i]));
  const children = [...state.children];
  const fresh: ChildRecord[] = [];
  const commands: AlbumCommand[] = [];
  let reopened = false;
  for (const child of incoming) {
    const at = index.get(child.arrival.messageId);
    if (at === undefined) {
      index.set(child.arrival.messageId, children.length);
      children.push(child);
      fresh.push(child);
      continue;
    }
    let known = children[at]!;
    const { withdrawnAt, withdrawal } = child.arrival;
    if (withdrawnAt !== undefined && known.arrival.withdrawnAt === undefined) {
      known = { ...known, arrival: { ...known.arrival, withdrawnAt, ...(withdrawal ? { withdrawal } : {}) } };
      children[at] = known;
      const decision = latestDecision(state);
      if (decision?.childMessageIds.includes(child.arrival.messageId)) {
        commands.push({ type: 'unsent', decision, unsent: withdrawalOf(child.arrival, withdrawnAt) });
      }
    }
    const versions = known.arrival.history.length;
    // A shorter history is an older version, delivered after a newer one: it changes nothing.
    if (child.arrival.history.length < versions) continue;
    const edited = child.arrival.history.length > versions;
    const completed = edited ? editedBy(known, child.arrival) : completedBy(known, child.arrival);
    if (!completed) continue;
    children[at] = completed.record;
    if (completed.positions.size > 0) {
      commands.push(...downloadsOf(completed.record, completed.positions));
      reopened = true;
    }
    const decision = latestDecision(state);
    if (edited && decision?.childMessageIds.includes(child.arrival.messageId)) {
      commands.push(...editsOf(child.arrival, versions).map((edit): AlbumCommand => ({ type: 'edited', decision, edit })));
    }
  }
  if (fresh.length === 0 && commands.length === 0 && children.every((child, i) => child === state.children[i])) {
    return { state, commands: [] };
  }
  const amended: DecisionRulesState = { ...state, children, mediaSettled: reopen(state, reopened) };
  if (fresh.length === 0) return { state: amended, commands };

  const late = state.phase !== 'collecting';
  const reasons = canonicalReasons([
    ...state.reviewReasons,
    ...analyzeMetadata(arrivals(amended)).reasons,
    ...(late && timings.lateItemPolicy === 'review' ? (['late_item'] as const) : []),
  ]);
  const flaggedAgain = reasons.length > state.reviewReasons.length || (late && timings.lateItemPolicy === 'review');
  const next: DecisionRulesState = {
    ...amended,
    reviewReasons: reasons,
    reviewResolved: flaggedAgain ? null : state.reviewResolved,
    phase: late ? 'processed' : 'collecting',
    firstUndecidedAt: state.firstUndecidedAt ?? now,
    lastNewChildAt: now,
  };
  const evaluated = evaluate(next, now, timings, profile);
  return { state: evaluated.state, commands: [...commands, ...fresh.flatMap((child) => downloadsOf(child)), ...evaluated.commands] };
}

/** The media-settled notices once attachments of the latest decision went back to pending. */
function reopen(state: DecisionRulesState, reopened: boolean): MediaSettledNotices | null {
  const { mediaSettled: notices } = state;
  return reopened && notices && notices.seq === latestDecision(state)?.seq ? { ...notices, reopened: true } : notices;
}

function retryDownloads(state: DecisionRulesState): Transition {
  const commands: AlbumCommand[] = [];
  const children = state.children.map((child) => {
    const positions = new Set(child.attachments.filter(retryable).map((attachment) => attachment.position));
    if (positions.size === 0) return child;
    const record: ChildRecord = {
      ...child,
      attachments: child.attachments.map((attachment) =>
        positions.has(attachment.position) ? { ...attachment, status: 'pending', error: null } : attachment,
      ),
    };
    commands.push(...downloadsOf(record, positions, true));
    return record;
  });
  if (commands.length === 0) return { state, commands };
  return { state: { ...state, children, mediaSettled: reopen(state, true) }, commands };
}

function evaluate(state: DecisionRulesState, now: number, timings: AlbumTimings, profile: AlbumProfile): Transition {
  let current = state;
  const commands: AlbumCommand[] = [];
  for (;;) {
    const transition = dueTransition(current, now, timings, profile);
    if (!transition) return { state: current, commands };
    current = transition.state;
    commands.push(...transition.commands);
  }
}

function dueTransition(state: DecisionRulesState, now: number, timings: AlbumTimings, profile: AlbumProfile): Transition | null {
  if (state.phase === 'collecting' && state.children.length > 0) {
    const { usableTotal } = analyzeMetadata(arrivals(state));
    if (usableTotal !== null && state.children.length === usableTotal)
      return decide(state, 'expected_count_reached', now, timings, profile);
    if (profile.maxChildren !== null && state.children.length >= profile.maxChildren)
      return decide(state, 'album_full', now, timings, profile);
  }
  const deadline = nextDeadline(state, timings);
  if (!deadline || deadline.at > now) return null;
  if (deadline.kind === 'late_window') return { state: { ...state, phase: 'closed' }, commands: [] };
  return decide(state, deadline.kind, now, timings, profile);
}

function decide(
  state: DecisionRulesState,
  trigger: DecisionTrigger,
  now: number,
  timings: AlbumTimings,
  profile: AlbumProfile,
): Transition {
  const previous = latestDecision(state);
  const childMessageIds = state.children
    .map((child) => child.arrival)
    .sort(compareChildren(profile.childOrder))
    .map((child) => child.messageId);
  const decision: DecisionView = {
    seq: Math.max(previous?.seq ?? 0, state.seqFloor ?? 0) + 1,
    trigger,
    childMessageIds,
    decidedAt: new Date(now).toISOString(),
  };
  const before = new Set(previous?.childMessageIds ?? []);
  const late: LateItems | null =
    trigger === 'late_item' ? { childMessageIds: childMessageIds.filter((id) => !before.has(id)), policy: timings.lateItemPolicy } : null;
  const decided: DecisionRulesState = {
    ...state,
    decisions: [...state.decisions, decision],
    phase: 'processed',
    firstUndecidedAt: null,
    lastDecisionAt: now,
  };
  const settled = emitMediaSettled(decided);
  return {
    state: settled.state,
    commands: [
      { type: 'decide', decision, reviewReasons: state.reviewReasons, reviewResolved: state.reviewResolved, late },
      ...settled.commands,
    ],
  };
}

function settleDownload(state: DecisionRulesState, messageId: string, position: number, result: DownloadResult): Transition {
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

/** `album.media_settled` for the latest decision once its media are terminal: once, and again after they were reopened. */
function emitMediaSettled(state: DecisionRulesState): Transition {
  const latest = latestDecision(state);
  if (!latest || !mediaSettled(state.children, latest)) return { state, commands: [] };
  const notices = state.mediaSettled?.seq === latest.seq ? state.mediaSettled : null;
  if (notices && !notices.reopened) return { state, commands: [] };
  const notice = (notices?.sent ?? 0) + 1;
  return {
    state: { ...state, mediaSettled: { seq: latest.seq, sent: notice, reopened: false } },
    commands: [{ type: 'media_settled', decision: latest, notice }],
  };
}
