import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialAttachments, initialState, step, type AlbumEvent, type DecisionRulesState } from '../../workflows/album-rules.js';
import {
  albumStatusOf,
  buildAlbumView,
  completedAlbumView,
  unseenChildren,
  childWithOutcomesOf,
  type StoredAlbumParts,
  type ChildWithOutcomes,
} from '../../src/domain/album-view.js';
import type { AlbumKey, AlbumProfile, AlbumTimings, ChildArrival, DecisionView, JsonValue, ReviewReason } from '../../src/domain/types.js';

const t0 = Date.parse('2026-09-29T10:00:00.000Z');
const timings: AlbumTimings = { quietPeriodMs: 100, maxWaitMs: 1_000, lateWindowMs: 5_000, lateItemPolicy: 'review' };
const profile: AlbumProfile = { maxChildren: null, childOrder: 'index' };
const key: AlbumKey = { workspace: 'ws', provider: 'whatsapp', accountId: 'acc_1', conversationId: 'conv_1', albumId: 'alb_1' };
const workflowId = 'album:ws:whatsapp:acc_1:conv_1:alb_1';

interface ChildSpec {
  index: number | null;
  total: number | null;
  /** Metadata that was present but unusable: the album object holds a string index. */
  invalid: boolean;
  sentAt: string | null;
  urls: (string | null)[];
}

function arrival(messageId: string, spec: ChildSpec): ChildArrival {
  const albumMeta: { index?: JsonValue; total?: JsonValue } = spec.invalid
    ? { index: 'first', ...(spec.total !== null ? { total: spec.total } : {}) }
    : { ...(spec.index !== null ? { index: spec.index } : {}), ...(spec.total !== null ? { total: spec.total } : {}) };
  return {
    messageId,
    index: spec.invalid ? null : spec.index,
    total: spec.total,
    metadataInvalid: spec.invalid,
    albumMeta,
    caption: `caption of ${messageId}`,
    sentAt: spec.sentAt,
    receivedAt: new Date(t0).toISOString(),
    attachments: spec.urls.map((url, position) => ({ position, url, mimeType: 'image/jpeg', telegramFileUniqueId: null })),
    history: [],
  };
}

/** A child as PostgreSQL stores it: as it arrived, its attachments as the ingress recorded them. */
function stored(child: ChildArrival): ChildWithOutcomes {
  return childWithOutcomesOf({ arrival: child, attachments: initialAttachments(child) });
}

const anySpec: fc.Arbitrary<ChildSpec> = fc.record({
  index: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
  total: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }),
  invalid: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  sentAt: fc.option(fc.constantFrom('2026-09-29T10:00:00Z', '2026-09-29T10:00:01+02:00', 'not a time'), { nil: null }),
  urls: fc.array(fc.option(fc.constant('https://x/file'), { nil: null }), { maxLength: 2 }),
});

const anyAlbum = fc
  .uniqueArray(fc.constantFrom('m1', 'm2', 'm3', 'm4', 'm5', 'm6'), { minLength: 1, maxLength: 6 })
  .chain((ids) =>
    fc.array(anySpec, { minLength: ids.length, maxLength: ids.length }).map((specs) => ids.map((id, i) => arrival(id, specs[i]!))),
  );

/**
 * The workflow's state after it saw the first `seen` children (in one or two signals), perhaps decided on
 * them, and settled some of their downloads.
 */
function workflowState(children: ChildArrival[], seen: number, split: number, decide: boolean, settles: boolean[]): DecisionRulesState {
  let state = initialState();
  const apply = (event: AlbumEvent) => (state = step(state, event, timings, profile).state);
  const first = children.slice(0, Math.min(split, seen));
  const second = children.slice(first.length, seen);
  if (first.length > 0) apply({ type: 'children_arrived', now: t0, children: first });
  if (second.length > 0) apply({ type: 'children_arrived', now: t0 + 10, children: second });
  if (decide && seen > 0) apply({ type: 'timer_fired', now: t0 + timings.maxWaitMs });
  let i = 0;
  for (const record of state.children) {
    for (const attachment of record.attachments) {
      if (attachment.status === 'pending' && settles[i++ % Math.max(settles.length, 1)]) {
        apply({
          type: 'download_settled',
          messageId: record.arrival.messageId,
          position: attachment.position,
          result: { status: 'downloaded', contentType: 'image/jpeg', bytes: 3, sha256: 'abc', error: null },
        });
      }
    }
  }
  return state;
}

const scenario = anyAlbum.chain((children) =>
  fc.record({
    children: fc.constant(children),
    seen: fc.integer({ min: 0, max: children.length }),
    split: fc.integer({ min: 0, max: children.length }),
    decide: fc.boolean(),
    settles: fc.array(fc.boolean(), { maxLength: 6 }),
    /** How many of the workflow's decisions and review reasons PostgreSQL recorded already. */
    recordedDecisions: fc.nat(3),
    recordedReasons: fc.nat(4),
  }),
);

/** PostgreSQL's parts: every child, the decisions and reasons it recorded so far (each decision at its own, earlier stamp). */
function storedParts(
  children: ChildArrival[],
  state: DecisionRulesState,
  recordedDecisions: number,
  recordedReasons: number,
): StoredAlbumParts {
  return {
    children: children.map(stored),
    decisions: state.decisions.slice(0, recordedDecisions).map((d) => ({ ...d, decidedAt: new Date(t0 - 1).toISOString() })),
    reviewReasons: state.reviewReasons.slice(0, recordedReasons),
    reviewResolved: null,
  };
}

describe('a workflow answer completed with the stored children', () => {
  it('never shows fewer children than either the workflow or PostgreSQL, each once', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), ({ children, seen, split, decide, settles, recordedDecisions, recordedReasons }, dropped) => {
        const state = workflowState(children, seen, split, decide, settles);
        const answer = albumStatusOf(workflowId, key, profile, state);
        const parts = storedParts(children, state, recordedDecisions, recordedReasons);
        // Whatever PostgreSQL no longer holds (one child dropped) the workflow's answer still shows.
        const partial = { ...parts, children: parts.children.filter((_, i) => i !== dropped % children.length) };
        for (const storedView of [parts, partial]) {
          const completed = completedAlbumView(answer, storedView, profile.childOrder);
          const shown = completed.children.map((c) => c.messageId);
          expect(new Set(shown).size).toBe(shown.length);
          expect(shown).toEqual(
            expect.arrayContaining([...answer.children.map((c) => c.messageId), ...storedView.children.map((c) => c.messageId)]),
          );
          expect(completed.distinctChildren).toBe(shown.length);
          expect(completed.distinctChildren).toBeGreaterThanOrEqual(Math.max(answer.distinctChildren, storedView.children.length));
          expect(completed.media.total).toBe(completed.children.reduce((sum, c) => sum + c.attachments.length, 0));
          expect(completed.decisions.map((d) => d.seq)).toEqual(answer.decisions.map((d) => d.seq));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('is the workflow answer itself when PostgreSQL holds nothing the workflow has not seen', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), ({ children, seen, split, decide, settles, recordedDecisions, recordedReasons }, from) => {
        const state = workflowState(children, Math.max(seen, 1), split, decide, settles);
        const answer = albumStatusOf(workflowId, key, profile, state);
        const parts = storedParts(children, state, recordedDecisions, recordedReasons);
        const seenOnly = {
          ...parts,
          children: parts.children.filter((c) => state.children.some((r) => r.arrival.messageId === c.messageId)),
        };
        const some = { ...seenOnly, children: seenOnly.children.slice(from % seenOnly.children.length) };
        for (const storedView of [seenOnly, some]) {
          expect(unseenChildren(answer, storedView.children)).toEqual([]);
          expect(completedAlbumView(answer, storedView, profile.childOrder)).toEqual(answer);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("is the body the view builder gives for the union: the workflow's children with their live attachments, the unseen stored ones", () => {
    fc.assert(
      fc.property(scenario, ({ children, seen, split, decide, settles, recordedDecisions, recordedReasons }) => {
        const state = workflowState(children, Math.max(seen, 1), split, decide, settles);
        const answer = albumStatusOf(workflowId, key, profile, state);
        const parts = storedParts(children, state, recordedDecisions, recordedReasons);
        const unseen = children.slice(state.children.length).map(stored);
        expect(unseenChildren(answer, parts.children)).toEqual(unseen);
        expect(completedAlbumView(answer, parts, profile.childOrder)).toEqual(
          buildAlbumView({
            workflowId,
            key,
            children: [...state.children.map(childWithOutcomesOf), ...unseen],
            decisions: state.decisions,
            reviewReasons: state.reviewReasons,
            reviewResolved: state.reviewResolved,
            closed: state.phase === 'closed',
            childOrder: profile.childOrder,
          }),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("is PostgreSQL's view while the workflow's answer is from before its first task loaded the album", () => {
    fc.assert(
      fc.property(scenario, ({ children, seen, split, decide, settles }) => {
        const earlier = workflowState(children, seen, split, decide, settles);
        const parts: StoredAlbumParts = {
          children: children.map(stored),
          decisions: earlier.decisions,
          reviewReasons: [...earlier.reviewReasons, 'late_item'],
          reviewResolved: earlier.decisions.length > 0 ? { at: new Date(t0).toISOString(), note: 'checked' } : null,
        };
        const loading = albumStatusOf(workflowId, key, profile, initialState());
        expect(loading.children).toEqual([]);
        expect(completedAlbumView(loading, parts, profile.childOrder)).toEqual(
          buildAlbumView({ workflowId, key, ...parts, closed: false, childOrder: profile.childOrder }),
        );
      }),
      { numRuns: 200 },
    );
  });

  const photo = (messageId: string, index: number) =>
    arrival(messageId, { index, total: 3, invalid: false, sentAt: '2026-09-29T10:00:00Z', urls: ['https://x/file'] });

  it("shows a stored edit the workflow has not seen, and the workflow's decision where both have one", () => {
    const children = [photo('m1', 0), photo('m2', 1)];
    const state = workflowState(children, 2, 2, true, [true]);
    const answer = albumStatusOf(workflowId, key, profile, state);
    expect(answer.decisions).toHaveLength(1);
    const edited: ChildWithOutcomes = {
      ...stored(children[1]!),
      caption: 'edited',
      history: [
        { caption: 'caption of m2', mediaReplaced: false, replacedAt: '2026-09-29T10:05:00.000Z', recordedAt: '2026-09-29T10:05:01.000Z' },
      ],
    };
    const recorded: DecisionView = { ...answer.decisions[0]!, decidedAt: '2026-09-29T09:00:00.000Z' };
    const completed = completedAlbumView(
      answer,
      { children: [stored(children[0]!), edited], decisions: [recorded], reviewReasons: [], reviewResolved: null },
      profile.childOrder,
    );
    expect(completed.children.map((c) => [c.messageId, c.caption, c.history.length])).toEqual([
      ['m1', 'caption of m1', 0],
      ['m2', 'edited', 1],
    ]);
    expect(completed.children[0]!.attachments).toEqual(answer.children[0]!.attachments);
    expect(completed.decisions).toEqual(answer.decisions);
  });

  it('shows the URL a redelivery brought before the workflow saw it: the attachment is pending, not unavailable', () => {
    const before = photo('m1', 0);
    const withoutUrl: ChildArrival = { ...before, attachments: before.attachments.map((a) => ({ ...a, url: null })) };
    const state = workflowState([withoutUrl], 1, 1, false, []);
    const answer = albumStatusOf(workflowId, key, profile, state);
    expect(answer.children[0]!.attachments.map((a) => a.status)).toEqual(['unavailable']);
    const redelivered = stored({ ...withoutUrl, attachments: withoutUrl.attachments.map((a) => ({ ...a, url: 'https://x/late' })) });
    expect(unseenChildren(answer, [redelivered]).map((c) => c.messageId)).toEqual(['m1']);
    const completed = completedAlbumView(
      answer,
      { children: [redelivered], decisions: [], reviewReasons: [], reviewResolved: null },
      profile.childOrder,
    );
    expect(completed.children[0]!.attachments.map((a) => a.status)).toEqual(['pending']);
    expect(completed.media).toMatchObject({ pending: 1, unavailable: 0 });
  });

  it('flags what the unseen children bring to the review and lifts a resolution it does not cover', () => {
    const children = [photo('m1', 0), photo('m2', 1), arrival('m3', { index: 1, total: 4, invalid: false, sentAt: null, urls: [] })];
    let state = workflowState(children, 2, 2, false, []);
    state = {
      ...state,
      reviewReasons: ['late_item'] satisfies ReviewReason[],
      reviewResolved: { at: new Date(t0).toISOString(), note: 'ok' },
    };
    const answer = albumStatusOf(workflowId, key, profile, state);
    expect(answer.review).toEqual({ required: false, reasons: ['late_item'], resolved: { at: new Date(t0).toISOString(), note: 'ok' } });
    const completed = completedAlbumView(
      answer,
      { children: children.map(stored), decisions: [], reviewReasons: [], reviewResolved: null },
      profile.childOrder,
    );
    expect(completed.review).toEqual({ required: true, reasons: ['total_conflict', 'duplicate_index', 'late_item'] });
    expect(completed.children.map((c) => c.messageId)).toEqual(['m1', 'm2', 'm3']);
    expect(completed).toMatchObject({ expectedTotal: null, distinctChildren: 3, expectedCountReached: false, state: 'collecting' });
  });
});
