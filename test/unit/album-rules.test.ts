import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  initialState,
  nextDeadline,
  restoreState,
  reviewRequired,
  step,
  type AlbumCommand,
  type AlbumEvent,
  type DecisionRulesState,
  type Transition,
} from '../../workflows/album-rules.js';
import type {
  ChildRecord,
  AlbumProfile,
  AlbumTimings,
  EarlierVersion,
  AttachmentView,
  ChildArrival,
  DecisionView,
  DownloadResult,
  JsonValue,
} from '../../src/domain/types.js';
import { buildAlbumView, buildMessageView, childWithOutcomesOf, type ChildWithOutcomes } from '../../src/domain/album-view.js';

const t0 = Date.parse('2026-09-29T10:00:00.000Z');
const timings: AlbumTimings = { quietPeriodMs: 100, maxWaitMs: 1_000, lateWindowMs: 5_000, lateItemPolicy: 'refresh' };
const unifyport: AlbumProfile = { maxChildren: null, childOrder: 'index' };

interface ChildSpec {
  index?: number | null;
  total?: number | null;
  invalid?: boolean;
  albumMeta?: { index?: JsonValue; total?: JsonValue } | null;
  sentAt?: string | null;
  urls?: (string | null)[];
}

function child(messageId: string, spec: ChildSpec = {}): ChildArrival {
  const index = spec.index ?? null;
  const total = spec.total ?? null;
  return {
    messageId,
    index,
    total,
    metadataInvalid: spec.invalid ?? false,
    albumMeta:
      spec.albumMeta !== undefined ? spec.albumMeta : { ...(index !== null ? { index } : {}), ...(total !== null ? { total } : {}) },
    caption: null,
    sentAt: spec.sentAt ?? null,
    receivedAt: new Date(t0).toISOString(),
    attachments: (spec.urls ?? []).map((url, position) => ({ position, url, mimeType: 'image/jpeg', telegramFileUniqueId: null })),
    history: [],
  };
}

function arrive(now: number, ...children: ChildArrival[]): AlbumEvent {
  return { type: 'children_arrived', now, children };
}

function tick(now: number): AlbumEvent {
  return { type: 'timer_fired', now };
}

const downloaded: DownloadResult = { status: 'downloaded', contentType: 'image/jpeg', bytes: 3, sha256: 'abc', error: null };

function settle(messageId: string, position: number, result: DownloadResult = downloaded): AlbumEvent {
  return { type: 'download_settled', messageId, position, result };
}

/** Applies events in order; returns the final state and every command, in order. */
function run(
  events: AlbumEvent[],
  options: { timings?: AlbumTimings; from?: DecisionRulesState; profile?: AlbumProfile } = {},
): Transition {
  let state = options.from ?? initialState();
  const commands: AlbumCommand[] = [];
  for (const event of events) {
    const transition = step(state, event, options.timings ?? timings, options.profile ?? unifyport);
    state = transition.state;
    commands.push(...transition.commands);
  }
  return { state, commands };
}

function decisionsOf(commands: AlbumCommand[]) {
  return commands.flatMap((command) => (command.type === 'decide' ? [command] : []));
}

function ids(state: DecisionRulesState): string[] {
  return state.children.map((c) => c.arrival.messageId);
}

/** Delivery plan: every child at least once, some up to three times, shuffled, then cut into batches. */
function deliveries<T>(items: T[]): fc.Arbitrary<T[][]> {
  return fc
    .array(fc.integer({ min: 1, max: 3 }), { minLength: items.length, maxLength: items.length })
    .chain((copies) => {
      const all = items.flatMap((item, i) => Array<T>(copies[i]!).fill(item));
      return fc.tuple(
        fc.shuffledSubarray(all, { minLength: all.length }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: all.length, maxLength: all.length }),
      );
    })
    .map(([order, sizes]) => {
      const batches: T[][] = [];
      for (let at = 0, i = 0; at < order.length; at += sizes[i]!, i += 1) batches.push(order.slice(at, at + sizes[i]!));
      return batches;
    });
}

describe('album rules: triggers', () => {
  it('decides expected_count_reached as soon as the agreed total is present, in album order', () => {
    const first = run([arrive(t0, child('c', { index: 2, total: 3 })), arrive(t0 + 10, child('a', { index: 0, total: 3 }))]);
    expect(decisionsOf(first.commands)).toEqual([]);
    expect(nextDeadline(first.state, timings)).toEqual({ kind: 'max_wait', at: t0 + 1_000 });

    const done = run([arrive(t0 + 20, child('b', { index: 1, total: 3 }))], { from: first.state });
    expect(decisionsOf(done.commands)).toEqual([
      {
        type: 'decide',
        decision: {
          seq: 1,
          trigger: 'expected_count_reached',
          childMessageIds: ['a', 'b', 'c'],
          decidedAt: new Date(t0 + 20).toISOString(),
        },
        reviewReasons: [],
        reviewResolved: null,
        late: null,
      },
    ]);
    expect(done.state.phase).toBe('processed');
  });

  it('counts children that carry no total when the others agree', () => {
    const { commands } = run([arrive(t0, child('a', { index: 0, total: 2 }), child('b', { index: 1 }))]);
    expect(decisionsOf(commands).map((d) => d.decision.trigger)).toEqual(['expected_count_reached']);
  });

  it('decides quiet_period only after a full quiet period without a new distinct child', () => {
    const { state } = run([arrive(t0, child('a')), arrive(t0 + 60, child('b'))]);
    expect(nextDeadline(state, timings)).toEqual({ kind: 'quiet_period', at: t0 + 160 });
    const early = run([tick(t0 + 159)], { from: state });
    expect(early.state).toBe(state);
    expect(early.commands).toEqual([]);
    const redelivered = run([arrive(t0 + 150, child('a'))], { from: state });
    expect(nextDeadline(redelivered.state, timings)).toEqual({ kind: 'quiet_period', at: t0 + 160 });
    const quiet = run([tick(t0 + 160)], { from: state });
    expect(decisionsOf(quiet.commands).map((d) => [d.decision.trigger, d.decision.childMessageIds])).toEqual([
      ['quiet_period', ['a', 'b']],
    ]);
  });

  it('decides max_wait when children keep coming faster than the quiet period', () => {
    const events: AlbumEvent[] = [];
    for (let i = 0; i < 12; i += 1) events.push(arrive(t0 + i * 90, child(`m${String(i).padStart(2, '0')}`)));
    const { state, commands } = run(events);
    expect(decisionsOf(commands)).toEqual([]);
    expect(nextDeadline(state, timings)).toEqual({ kind: 'max_wait', at: t0 + 1_000 });
    const fired = run([tick(t0 + 1_000)], { from: state });
    const [decision] = decisionsOf(fired.commands);
    expect(decision?.decision.trigger).toBe('max_wait');
    expect(decision?.decision.childMessageIds).toHaveLength(12);
  });

  it('ends a known total that is never reached with max_wait, never with a quiet period', () => {
    const { state } = run([arrive(t0, child('a', { index: 0, total: 3 }), child('b', { index: 1, total: 3 }))]);
    expect(nextDeadline(state, timings)).toEqual({ kind: 'max_wait', at: t0 + 1_000 });
    expect(run([tick(t0 + 500)], { from: state }).commands).toEqual([]);
    const fired = run([tick(t0 + 1_000)], { from: state });
    expect(decisionsOf(fired.commands).map((d) => [d.decision.trigger, d.decision.childMessageIds])).toEqual([['max_wait', ['a', 'b']]]);
  });

  it('takes the earlier of two overdue deadlines when the timer fires late', () => {
    const { state } = run([arrive(t0, child('a'))]);
    const fired = run([tick(t0 + 50_000)], { from: state });
    expect(decisionsOf(fired.commands).map((d) => d.decision.trigger)).toEqual(['quiet_period']);
  });
});

describe('album rules: metadata problems flag review and drop nothing', () => {
  it('treats conflicting totals as no usable total', () => {
    const { state, commands } = run([arrive(t0, child('a', { index: 0, total: 2 }), child('b', { index: 1, total: 3 }))]);
    expect(decisionsOf(commands)).toEqual([]);
    expect(state.reviewReasons).toEqual(['total_conflict']);
    expect(nextDeadline(state, timings)?.kind).toBe('quiet_period');
    const quiet = run([tick(t0 + 100)], { from: state });
    expect(decisionsOf(quiet.commands).map((d) => [d.decision.trigger, d.decision.childMessageIds, d.reviewReasons])).toEqual([
      ['quiet_period', ['a', 'b'], ['total_conflict']],
    ]);
  });

  it('flags more distinct children than the agreed total as a total conflict', () => {
    const { state, commands } = run([
      arrive(t0, child('a', { index: 0, total: 2 }), child('b', { index: 1, total: 2 }), child('c', { index: 2, total: 2 })),
    ]);
    expect(decisionsOf(commands)).toEqual([]);
    expect(state.reviewReasons).toEqual(['total_conflict']);
    expect(ids(state)).toEqual(['a', 'b', 'c']);
  });

  it('disables the count trigger on a duplicate index even when the count matches', () => {
    const { state, commands } = run([arrive(t0, child('a', { index: 0, total: 2 }), child('b', { index: 0, total: 2 }))]);
    expect(decisionsOf(commands)).toEqual([]);
    expect(state.reviewReasons).toEqual(['duplicate_index']);
    const quiet = run([tick(t0 + 100)], { from: state });
    expect(decisionsOf(quiet.commands).map((d) => d.decision.childMessageIds)).toEqual([['a', 'b']]);
  });

  it('disables the count trigger on invalid metadata', () => {
    const { state, commands } = run([
      arrive(t0, child('a', { index: 0, total: 2 }), child('b', { invalid: true, albumMeta: { index: '1', total: 2 }, total: 2 })),
    ]);
    expect(decisionsOf(commands)).toEqual([]);
    expect(state.reviewReasons).toEqual(['invalid_metadata']);
    expect(nextDeadline(state, timings)?.kind).toBe('quiet_period');
  });

  it('keeps every review reason it has seen, in a fixed order', () => {
    const { state } = run([
      arrive(t0, child('a', { index: 0, total: 2, invalid: true })),
      arrive(t0 + 1, child('b', { index: 0, total: 3 })),
    ]);
    expect(state.reviewReasons).toEqual(['total_conflict', 'duplicate_index', 'invalid_metadata']);
  });
});

describe('album rules: redelivery', () => {
  it('changes nothing when every child of a batch is known', () => {
    const { state } = run([arrive(t0, child('a', { index: 0, total: 3, urls: ['https://x/a'] }))]);
    const again = step(state, arrive(t0 + 50, child('a', { index: 0, total: 3, urls: ['https://x/a'] }), child('a')), timings, unifyport);
    expect(again.state).toBe(state);
    expect(again.commands).toEqual([]);
  });

  it('keeps one child per message id within a batch', () => {
    const { state } = run([arrive(t0, child('a', { index: 0 }), child('a', { index: 5 }))]);
    expect(state.children).toHaveLength(1);
    expect(state.children[0]?.arrival.index).toBe(0);
  });
});

describe('album rules: late items', () => {
  const decidedAt = t0 + 10;
  const processed = run([arrive(t0, child('a', { index: 0, total: 2 })), arrive(decidedAt, child('b', { index: 1, total: 2 }))]).state;

  it('debounces a burst of late children into one late_item decision with the full set', () => {
    const first = run([arrive(decidedAt + 1_000, child('c', { index: 2, total: 2 }))], { from: processed });
    expect(decisionsOf(first.commands)).toEqual([]);
    expect(nextDeadline(first.state, timings)).toEqual({ kind: 'late_item', at: decidedAt + 1_100 });
    const second = run([arrive(decidedAt + 1_050, child('d', { index: 3, total: 2 }))], { from: first.state });
    expect(nextDeadline(second.state, timings)).toEqual({ kind: 'late_item', at: decidedAt + 1_150 });
    const fired = run([tick(decidedAt + 1_150)], { from: second.state });
    expect(decisionsOf(fired.commands)).toEqual([
      {
        type: 'decide',
        decision: {
          seq: 2,
          trigger: 'late_item',
          childMessageIds: ['a', 'b', 'c', 'd'],
          decidedAt: new Date(decidedAt + 1_150).toISOString(),
        },
        reviewReasons: ['total_conflict'],
        reviewResolved: null,
        late: { childMessageIds: ['c', 'd'], policy: 'refresh' },
      },
    ]);
  });

  it('bounds the debounce of an endless burst by the maximum wait', () => {
    let state = processed;
    for (let i = 0; i < 12; i += 1) state = run([arrive(decidedAt + 100 + i * 90, child(`late${i}`))], { from: state }).state;
    expect(nextDeadline(state, timings)).toEqual({ kind: 'late_item', at: decidedAt + 100 + 1_000 });
    const fired = run([tick(decidedAt + 1_100)], { from: state });
    expect(decisionsOf(fired.commands).map((d) => [d.decision.trigger, d.late?.childMessageIds.length])).toEqual([['late_item', 12]]);
  });

  it.each([
    ['refresh', []],
    ['reanalyze', []],
    ['review', ['late_item']],
  ] as const)('applies LATE_ITEM_POLICY=%s', (policy, extraReasons) => {
    const policyTimings = { ...timings, lateItemPolicy: policy };
    const { state, commands } = run([arrive(t0, child('a'), child('b')), tick(t0 + 100), arrive(t0 + 500, child('c')), tick(t0 + 600)], {
      timings: policyTimings,
    });
    expect(state.reviewReasons).toEqual([...extraReasons]);
    const [first, late] = decisionsOf(commands);
    expect(first?.decision.trigger).toBe('quiet_period');
    expect(late?.decision.trigger).toBe('late_item');
    expect(late?.late).toEqual({ childMessageIds: ['c'], policy });
    expect(late?.reviewReasons).toEqual([...extraReasons]);
  });

  it('closes after the late window and treats a child after that as late again', () => {
    expect(nextDeadline(processed, timings)).toEqual({ kind: 'late_window', at: decidedAt + 5_000 });
    const closed = run([tick(decidedAt + 5_000)], { from: processed });
    expect(closed.state.phase).toBe('closed');
    expect(closed.commands).toEqual([]);
    expect(nextDeadline(closed.state, timings)).toBeNull();

    const reopened = run([arrive(decidedAt + 9_000, child('c', { index: 2 })), tick(decidedAt + 9_100)], { from: closed.state });
    expect(decisionsOf(reopened.commands).map((d) => [d.decision.seq, d.decision.trigger])).toEqual([[2, 'late_item']]);
    expect(reopened.state.phase).toBe('processed');
    expect(nextDeadline(reopened.state, timings)).toEqual({ kind: 'late_window', at: decidedAt + 14_100 });
  });

  it('closes at the decision itself when the late window is zero', () => {
    const { state, commands } = run([arrive(t0, child('a', { index: 0, total: 1 }))], { timings: { ...timings, lateWindowMs: 0 } });
    expect(decisionsOf(commands)).toHaveLength(1);
    expect(state.phase).toBe('closed');
  });
});

describe('album rules: media', () => {
  it('starts a download for every attachment with a URL as soon as its child arrives', () => {
    const { commands } = run([arrive(t0, child('a', { index: 0, total: 3, urls: ['https://x/1', null, 'https://x/3'] }))]);
    expect(commands).toEqual([
      { type: 'download', messageId: 'a', position: 0, retry: false },
      { type: 'download', messageId: 'a', position: 2, retry: false },
    ]);
  });

  it('emits media_settled once, after the decision, when every attachment of its children is terminal', () => {
    const { state, commands } = run([
      arrive(t0, child('a', { index: 0, total: 2, urls: ['https://x/a'] })),
      arrive(t0 + 1, child('b', { index: 1, total: 2, urls: [null] })),
    ]);
    expect(commands.map((c) => c.type)).toEqual(['download', 'decide']);
    const settled = run([settle('a', 0), settle('a', 0)], { from: state });
    expect(settled.commands).toEqual([{ type: 'media_settled', decision: state.decisions[0], notice: 1 }]);
    expect(settled.state.children[0]?.attachments[0]).toEqual({ position: 0, ...downloaded });
  });

  it('emits media_settled with the decision when nothing is pending', () => {
    const { commands } = run([arrive(t0, child('a', { index: 0, total: 1, urls: [null] }))]);
    expect(commands.map((c) => c.type)).toEqual(['decide', 'media_settled']);
  });

  it('settles only for the latest decision', () => {
    const { state } = run([
      arrive(t0, child('a', { index: 0, total: 1, urls: ['https://x/a'] })),
      arrive(t0 + 10, child('b', { index: 1, urls: ['https://x/b'] })),
      tick(t0 + 110),
      settle('a', 0),
    ]);
    expect(state.decisions.map((d) => d.seq)).toEqual([1, 2]);
    expect(state.mediaSettled).toBeNull();
    const settled = run([settle('b', 0, { status: 'expired', contentType: null, bytes: null, sha256: null, error: 'HTTP 410' })], {
      from: state,
    });
    expect(settled.commands).toEqual([{ type: 'media_settled', decision: state.decisions[1], notice: 1 }]);
  });
});

describe('album rules: a redelivery that brings a URL', () => {
  const gone: DownloadResult = { status: 'expired', contentType: null, bytes: null, sha256: null, error: 'HTTP 410' };

  it('downloads the attachment a known child lacked a URL for, at once, and media settle waits for it', () => {
    const { state, commands } = run([arrive(t0, child('a', { index: 0, total: 1, urls: [null] }))]);
    expect(commands.map((c) => c.type)).toEqual(['decide', 'media_settled']);
    expect(state.children[0]?.attachments[0]?.status).toBe('unavailable');

    const again = step(state, arrive(t0 + 50, child('a', { index: 0, total: 1, urls: ['https://x/a'] })), timings, unifyport);
    expect(again.commands).toEqual([{ type: 'download', messageId: 'a', position: 0, retry: false }]);
    expect(again.state.children).toHaveLength(1);
    expect(again.state.children[0]?.attachments[0]?.status).toBe('pending');
    expect(again.state.children[0]?.arrival.attachments[0]?.url).toBe('https://x/a');
    expect(again.state.decisions).toEqual(state.decisions);

    const settled = step(again.state, settle('a', 0), timings, unifyport);
    expect(settled.commands).toEqual([{ type: 'media_settled', decision: state.decisions[0], notice: 2 }]);
    expect(settled.state.children[0]?.attachments[0]?.status).toBe('downloaded');
  });

  it('holds the first media_settled back until the late URL is downloaded', () => {
    const first = run([arrive(t0, child('a', { index: 0, total: 2, urls: [null] }))]);
    const url = run([arrive(t0 + 5, child('a', { index: 0, total: 2, urls: ['https://x/a'] }))], { from: first.state });
    const decided = run([arrive(t0 + 10, child('b', { index: 1, total: 2, urls: [null] }))], { from: url.state });
    expect(decided.commands.map((c) => c.type)).toEqual(['decide']);
    const settled = run([settle('a', 0, gone)], { from: decided.state });
    expect(settled.commands).toEqual([{ type: 'media_settled', decision: decided.state.decisions[0], notice: 1 }]);
  });

  it('takes a new attachment position of a known child, and the caption it lacked', () => {
    const { state } = run([arrive(t0, { ...child('a', { urls: ['https://x/1'] }), caption: null })]);
    const again = step(
      state,
      arrive(t0 + 1, { ...child('a', { urls: ['https://x/1', 'https://x/2'] }), caption: 'hello' }),
      timings,
      unifyport,
    );
    expect(again.commands).toEqual([{ type: 'download', messageId: 'a', position: 1, retry: false }]);
    expect(again.state.children[0]?.arrival.caption).toBe('hello');
    expect(again.state.children[0]?.attachments.map((a) => a.status)).toEqual(['pending', 'pending']);
  });

  it('keeps a URL it has, and the outcome of a download that already ran', () => {
    const { state } = run([arrive(t0, child('a', { urls: ['https://x/1'] })), settle('a', 0)]);
    const again = step(state, arrive(t0 + 1, child('a', { urls: ['https://x/other'] })), timings, unifyport);
    expect(again.state).toBe(state);
    expect(again.commands).toEqual([]);
  });
});

describe('album rules: operator actions', () => {
  const failed: DownloadResult = { status: 'failed', contentType: null, bytes: null, sha256: null, error: 'HTTP 500' };
  const expired: DownloadResult = { status: 'expired', contentType: null, bytes: null, sha256: null, error: 'HTTP 404' };

  it('retries every failed and expired attachment, and notifies media settled again afterwards', () => {
    const { state } = run([
      arrive(
        t0,
        child('a', { index: 0, total: 2, urls: ['https://x/a', null] }),
        child('b', { index: 1, total: 2, urls: ['https://x/b'] }),
      ),
      settle('a', 0, failed),
      settle('b', 0, expired),
    ]);
    expect(state.mediaSettled).toEqual({ seq: 1, sent: 1, reopened: false });
    const retried = step(state, { type: 'downloads_retried' }, timings, unifyport);
    expect(retried.commands).toEqual([
      { type: 'download', messageId: 'a', position: 0, retry: true },
      { type: 'download', messageId: 'b', position: 0, retry: true },
    ]);
    expect(retried.state.children.map((c) => c.attachments.map((a) => a.status))).toEqual([['pending', 'unavailable'], ['pending']]);
    const done = run([settle('a', 0), settle('b', 0)], { from: retried.state });
    expect(done.commands).toEqual([{ type: 'media_settled', decision: state.decisions[0], notice: 2 }]);
  });

  it('has nothing to retry when nothing failed', () => {
    const { state } = run([arrive(t0, child('a', { urls: ['https://x/a'] })), settle('a', 0)]);
    const retried = step(state, { type: 'downloads_retried' }, timings, unifyport);
    expect(retried).toEqual({ state, commands: [] });
  });

  it('resolves the review until a new reason flags the album again', () => {
    const { state } = run([arrive(t0, child('a', { index: 0, total: 3 }), child('b', { index: 0, total: 3 }))]);
    expect(state.reviewReasons).toEqual(['duplicate_index']);
    expect(reviewRequired(state)).toBe(true);
    const resolved = step(state, { type: 'review_resolved', now: t0 + 5, note: 'checked' }, timings, unifyport).state;
    expect(resolved.reviewResolved).toEqual({ at: new Date(t0 + 5).toISOString(), note: 'checked' });
    expect(reviewRequired(resolved)).toBe(false);

    const same = run([arrive(t0 + 6, child('c', { index: 1 }))], { from: resolved }).state;
    expect(reviewRequired(same)).toBe(false);
    const conflict = run([arrive(t0 + 7, child('d', { index: 2, total: 9 }))], { from: same }).state;
    expect(conflict.reviewReasons).toEqual(['total_conflict', 'duplicate_index']);
    expect(conflict.reviewResolved).toBeNull();
    expect(reviewRequired(conflict)).toBe(true);
  });

  it('flags a resolved album again for a late item under the review policy', () => {
    const review = { ...timings, lateItemPolicy: 'review' as const };
    const decided = run([arrive(t0, child('a', { index: 0, total: 1 })), arrive(t0 + 1, child('b', { index: 1 }))], {
      timings: review,
    }).state;
    const late = run([tick(t0 + 200)], { from: decided, timings: review }).state;
    const resolved = step(late, { type: 'review_resolved', now: t0 + 300, note: 'fine' }, review, unifyport).state;
    expect(reviewRequired(resolved)).toBe(false);
    const again = run([arrive(t0 + 400, child('c', { index: 2 }))], { from: resolved, timings: review }).state;
    expect(reviewRequired(again)).toBe(true);
  });
});

describe('album rules: restore from PostgreSQL', () => {
  const stored = (arrival: ChildArrival, status: AttachmentView['status'] = 'downloaded'): ChildRecord => ({
    arrival,
    attachments: arrival.attachments.map((ref) => ({
      position: ref.position,
      status,
      contentType: null,
      bytes: null,
      sha256: null,
      error: null,
    })),
  });
  const first: DecisionView = {
    seq: 1,
    trigger: 'expected_count_reached',
    childMessageIds: ['a', 'b'],
    decidedAt: new Date(t0).toISOString(),
  };
  const a = child('a', { index: 0, total: 2, urls: ['https://x/a'] });
  const b = child('b', { index: 1, total: 2, urls: ['https://x/b'] });

  it('closes at once when nothing new is stored and the window is over', () => {
    const { state, commands } = restoreState(
      {
        decisions: [first],
        children: [stored(a), stored(b)],
        reviewReasons: [],
        reviewResolved: null,
        mediaSettledNotices: 1,
        editNotices: {},
      },
      t0 + 60_000,
      timings,
      unifyport,
    );
    expect(state.phase).toBe('closed');
    expect(commands).toEqual([]);
    const redelivered = step(state, arrive(t0 + 60_001, a), timings, unifyport);
    expect(redelivered.state).toBe(state);
  });

  it('numbers the decisions of an album after the last seq of an earlier album under its id that a purge removed', () => {
    const { commands } = restoreState(
      {
        decisions: [],
        children: [stored(a), stored(b)],
        reviewReasons: [],
        reviewResolved: null,
        mediaSettledNotices: 0,
        editNotices: {},
        seqFloor: 3,
      },
      t0,
      timings,
      unifyport,
    );
    // Both children are there (index and total agree): the album is decided at once, as its fourth decision.
    expect(decisionsOf(commands).map((d) => d.decision.seq)).toEqual([4]);
  });

  it('treats a stored child no decision includes as late and resumes pending downloads', () => {
    const c = child('c', { index: 2, urls: ['https://x/c'] });
    const { state, commands } = restoreState(
      {
        decisions: [first],
        children: [stored(a), stored(b, 'pending'), stored(c, 'pending')],
        reviewReasons: ['duplicate_index'],
        reviewResolved: null,
        mediaSettledNotices: 0,
        editNotices: {},
      },
      t0 + 60_000,
      { ...timings, lateItemPolicy: 'review' },
      unifyport,
    );
    expect(commands).toEqual([
      { type: 'download', messageId: 'b', position: 0, retry: false },
      { type: 'download', messageId: 'c', position: 0, retry: false },
    ]);
    expect(state.phase).toBe('processed');
    expect(state.reviewReasons).toEqual(['total_conflict', 'duplicate_index', 'late_item']);
    const late = run([tick(t0 + 60_100)], { from: state, timings: { ...timings, lateItemPolicy: 'review' } });
    expect(decisionsOf(late.commands).map((d) => [d.decision.seq, d.decision.trigger, d.decision.childMessageIds])).toEqual([
      [2, 'late_item', ['a', 'b', 'c']],
    ]);
  });

  it('collects stored children afresh when no decision exists', () => {
    const { state, commands } = restoreState(
      {
        decisions: [],
        children: [stored(a, 'pending'), stored(b, 'pending')],
        reviewReasons: [],
        reviewResolved: null,
        mediaSettledNotices: 0,
        editNotices: {},
      },
      t0,
      timings,
      unifyport,
    );
    expect(decisionsOf(commands).map((d) => d.decision.trigger)).toEqual(['expected_count_reached']);
    expect(state.decisions).toHaveLength(1);
  });
});

describe('album rules: properties', () => {
  const messageIds = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];

  /** A consistent album: total n, indexes 0..n-1, optional totals on some children. */
  const consistentAlbum = fc
    .integer({ min: 1, max: messageIds.length })
    .chain((n) =>
      fc.tuple(
        fc.constant(n),
        fc.array(fc.boolean(), { minLength: n, maxLength: n }),
        fc.array(fc.nat(5_000), { minLength: n, maxLength: n }),
      ),
    );

  it('yields the same distinct set and first decision for any interleaving and duplication of a consistent album', () => {
    fc.assert(
      fc.property(
        consistentAlbum.chain(([n, carriesTotal, sent]) => {
          const children = messageIds.slice(0, n).map((id, i) =>
            child(id, {
              index: (i + 3) % n,
              total: carriesTotal[i] || i === 0 ? n : null,
              sentAt: new Date(t0 + sent[i]!).toISOString(),
            }),
          );
          return fc.tuple(fc.constant(children), deliveries(children), fc.array(fc.integer({ min: 1, max: 40 })));
        }),
        ([children, batches, gaps]) => {
          let now = t0;
          const events: AlbumEvent[] = [];
          batches.forEach((batch, i) => {
            now += gaps[i % Math.max(gaps.length, 1)] ?? 1;
            events.push(arrive(now, ...batch));
            if (i % 2 === 1) events.push(tick(now));
          });
          const { state, commands } = run(events);
          const expected = [...children].sort((x, y) => (x.index ?? 0) - (y.index ?? 0)).map((c) => c.messageId);
          expect(new Set(ids(state))).toEqual(new Set(children.map((c) => c.messageId)));
          const decisions = decisionsOf(commands);
          expect(decisions).toHaveLength(1);
          expect(decisions[0]?.decision.trigger).toBe('expected_count_reached');
          expect(decisions[0]?.decision.childMessageIds).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  const anyMeta = fc.record({
    index: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
    total: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }),
    invalid: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    urls: fc.array(fc.option(fc.constant('https://x/file'), { nil: null }), { maxLength: 2 }),
  });

  const anyAlbum = fc
    .uniqueArray(fc.constantFrom(...messageIds), { minLength: 1, maxLength: messageIds.length })
    .chain((chosen) => fc.tuple(fc.constant(chosen), fc.array(anyMeta, { minLength: chosen.length, maxLength: chosen.length })))
    .map(([chosen, metas]) => chosen.map((id, i) => child(id, metas[i])));

  /** Arrivals (with duplicates), timer fires and download results at increasing times. */
  const scenario = anyAlbum.chain((children) =>
    fc.tuple(
      fc.constant(children),
      deliveries(children),
      fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 30 }),
      fc.array(fc.constantFrom('tick', 'settle', 'none'), { minLength: 1, maxLength: 30 }),
      fc.constantFrom('refresh', 'reanalyze', 'review'),
    ),
  );

  function playScenario(
    children: ChildArrival[],
    batches: ChildArrival[][],
    gaps: number[],
    extras: string[],
    policy: AlbumTimings['lateItemPolicy'],
  ) {
    const scenarioTimings = { ...timings, lateItemPolicy: policy };
    let state = initialState();
    let now = t0;
    const commands: AlbumCommand[] = [];
    const apply = (event: AlbumEvent) => {
      const transition = step(state, event, scenarioTimings, unifyport);
      state = transition.state;
      commands.push(...transition.commands);
    };
    batches.forEach((batch, i) => {
      now += gaps[i % gaps.length]!;
      apply(arrive(now, ...batch));
      const extra = extras[i % extras.length];
      if (extra === 'tick') apply(tick(now));
      if (extra === 'settle') {
        const pending = commands.filter((c) => c.type === 'download');
        const target = pending[i % Math.max(pending.length, 1)];
        if (target?.type === 'download') apply(settle(target.messageId, target.position));
      }
    });
    for (let guard = 0; guard < 20; guard += 1) {
      const deadline = nextDeadline(state, scenarioTimings);
      if (!deadline) break;
      now = Math.max(now, deadline.at);
      apply(tick(now));
    }
    return { state, commands, distinct: new Set(children.map((c) => c.messageId)) };
  }

  it('never loses a child: the decisions together include every distinct child, and each restates the previous', () => {
    fc.assert(
      fc.property(scenario, ([children, batches, gaps, extras, policy]) => {
        const { state, commands, distinct } = playScenario(children, batches, gaps, extras, policy);
        const decisions = decisionsOf(commands).map((c) => c.decision);
        expect(state.phase).toBe('closed');
        expect(decisions.length).toBeGreaterThan(0);
        expect(new Set(decisions.flatMap((d) => d.childMessageIds))).toEqual(distinct);
        expect(decisions.map((d) => d.seq)).toEqual(decisions.map((_, i) => i + 1));
        expect(decisions.slice(1).every((d) => d.trigger === 'late_item')).toBe(true);
        expect(decisions[0]?.trigger).not.toBe('late_item');
        decisions.forEach((decision, i) => {
          expect(new Set(decision.childMessageIds).size).toBe(decision.childMessageIds.length);
          for (const id of decisions[i - 1]?.childMessageIds ?? []) expect(decision.childMessageIds).toContain(id);
        });
        expect(state.decisions).toEqual(decisions);
      }),
      { numRuns: 300 },
    );
  });

  it('never creates a decision or changes anything on a redelivery', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), fc.integer({ min: 0, max: 100_000 }), ([children, batches, gaps, extras, policy], pick, later) => {
        const { state } = playScenario(children, batches, gaps, extras, policy);
        const known = children[pick % children.length]!;
        const snapshot = structuredClone(state);
        const again = step(state, arrive(t0 + later, known, known), { ...timings, lateItemPolicy: policy }, unifyport);
        expect(again.commands).toEqual([]);
        expect(again.state).toBe(state);
        expect(state).toEqual(snapshot);
      }),
      { numRuns: 200 },
    );
  });

  it('downloads a late URL of a known child exactly once and decides nothing for it', () => {
    fc.assert(
      fc.property(scenario, fc.nat(), fc.integer({ min: 0, max: 100_000 }), ([children, batches, gaps, extras, policy], pick, later) => {
        const { state } = playScenario(children, batches, gaps, extras, policy);
        const known = children[pick % children.length]!;
        const lacking = known.attachments.filter((ref) => ref.url === null).map((ref) => ref.position);
        const withUrls = {
          ...known,
          attachments: known.attachments.map((ref) => ({ ...ref, url: ref.url ?? `https://x/late-${ref.position}` })),
        };
        const scenarioTimings = { ...timings, lateItemPolicy: policy };
        const again = step(state, arrive(t0 + later, withUrls, withUrls), scenarioTimings, unifyport);
        const record = state.children.find((c) => c.arrival.messageId === known.messageId)!;
        const reopened = lacking.filter((position) => record.attachments.find((a) => a.position === position)?.status === 'unavailable');
        expect(again.commands).toEqual(
          reopened.map((position) => ({ type: 'download', messageId: known.messageId, position, retry: false })),
        );
        expect(again.state.decisions).toEqual(state.decisions);
        expect(again.state.children.map((c) => c.arrival.messageId)).toEqual(state.children.map((c) => c.arrival.messageId));
        const twice = step(again.state, arrive(t0 + later + 1, withUrls), scenarioTimings, unifyport);
        expect(twice.commands).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('never mutates the state it is given', () => {
    fc.assert(
      fc.property(scenario, ([children, batches, gaps, extras, policy]) => {
        let state = initialState();
        let now = t0;
        batches.forEach((batch, i) => {
          now += gaps[i % gaps.length]!;
          const before = structuredClone(state);
          const event = extras[i % extras.length] === 'tick' ? tick(now) : arrive(now, ...batch);
          const next = step(state, event, { ...timings, lateItemPolicy: policy }, unifyport).state;
          expect(state).toEqual(before);
          state = next;
        });
        expect(children.length).toBeGreaterThan(0);
      }),
      { numRuns: 100 },
    );
  });
});

describe('album rules: Telegram albums (the profile in the workflow input)', () => {
  const telegram: AlbumProfile = { maxChildren: 10, childOrder: 'message_id' };

  /** A Telegram child: a numeric message id, no index or total, one file with no URL. */
  function photo(
    messageId: number,
    spec: { sentAt?: string; caption?: string | null; fileUniqueId?: string; history?: EarlierVersion[] } = {},
  ): ChildArrival {
    return {
      ...child(String(messageId), { albumMeta: null, sentAt: spec.sentAt ?? new Date(t0).toISOString() }),
      caption: spec.caption ?? null,
      attachments: [{ position: 0, url: null, mimeType: null, telegramFileUniqueId: spec.fileUniqueId ?? `file-${messageId}` }],
      history: spec.history ?? [],
    };
  }
  const ids10 = Array.from({ length: 10 }, (_, i) => i + 1);

  it('decides album_full at the tenth distinct child, before the quiet period, in numeric message_id order', () => {
    const nine = run([arrive(t0, ...ids10.slice(0, 9).map((id) => photo(id))), arrive(t0 + 10, photo(3))], { profile: telegram });
    expect(decisionsOf(nine.commands)).toEqual([]);
    const full = run([arrive(t0 + 20, photo(10))], { from: nine.state, profile: telegram });
    expect(decisionsOf(full.commands).map((d) => [d.decision.trigger, d.decision.decidedAt, d.decision.childMessageIds])).toEqual([
      ['album_full', new Date(t0 + 20).toISOString(), ids10.map(String)],
    ]);
    expect(run([arrive(t0 + 20, photo(10))], { from: nine.state }).commands.some((c) => c.type === 'decide')).toBe(false);
  });

  it('downloads a Telegram file that has no URL instead of calling it unavailable', () => {
    const { state, commands } = run([arrive(t0, photo(7))], { profile: telegram });
    expect(state.children[0]?.attachments[0]?.status).toBe('pending');
    expect(commands).toContainEqual({ type: 'download', messageId: '7', position: 0, retry: false });
  });

  it('orders children by message_id as numbers, then sentAt', () => {
    const late = '2026-09-29T11:00:00.000Z';
    const { commands } = run([arrive(t0, photo(10), photo(100, { sentAt: late }), photo(9, { sentAt: late }), photo(11)), tick(t0 + 100)], {
      profile: telegram,
    });
    expect(decisionsOf(commands)[0]?.decision.childMessageIds).toEqual(['9', '10', '11', '100']);
  });

  const version = (caption: string | null, mediaReplaced = false, recordedAt = t0 + 500): EarlierVersion => ({
    caption,
    mediaReplaced,
    replacedAt: new Date(recordedAt).toISOString(),
    recordedAt: new Date(recordedAt).toISOString(),
  });

  function decidedAlbum() {
    return run([arrive(t0, photo(1, { caption: 'trip' }), photo(2)), tick(t0 + 100), settle('1', 0), settle('2', 0)], {
      profile: telegram,
    });
  }

  it('notifies each edit of a decided child once, with the caption it set and the one it replaced', () => {
    const decided = decidedAlbum();
    const [first] = decisionsOf(decided.commands);
    const edited = run([arrive(t0 + 500, photo(1, { caption: 'trip (day 1)', history: [version('trip')] }))], {
      from: decided.state,
      profile: telegram,
    });
    expect(edited.commands).toEqual([
      {
        type: 'edited',
        decision: first!.decision,
        edit: { messageId: '1', version: 1, caption: 'trip (day 1)', previousCaption: 'trip', mediaReplaced: false },
      },
    ]);
    expect(edited.state.children[0]?.arrival.caption).toBe('trip (day 1)');
    expect(edited.state.decisions).toEqual(decided.state.decisions);

    const twice = run([arrive(t0 + 600, photo(1, { caption: null, history: [version('trip'), version('trip (day 1)')] }))], {
      from: edited.state,
      profile: telegram,
    });
    expect(twice.commands).toEqual([
      {
        type: 'edited',
        decision: first!.decision,
        edit: { messageId: '1', version: 2, caption: null, previousCaption: 'trip (day 1)', mediaReplaced: false },
      },
    ]);
    expect(twice.state.children[0]?.arrival.caption).toBeNull();
  });

  it('changes nothing for a redelivered or an older version of an edited child', () => {
    const decided = decidedAlbum();
    const edited = run([arrive(t0 + 500, photo(1, { caption: 'new', history: [version('trip')] }))], {
      from: decided.state,
      profile: telegram,
    });
    const again = step(edited.state, arrive(t0 + 600, photo(1, { caption: 'new', history: [version('trip')] })), timings, telegram);
    expect(again.commands).toEqual([]);
    expect(again.state).toBe(edited.state);
    const older = step(edited.state, arrive(t0 + 700, photo(1, { caption: 'trip' })), timings, telegram);
    expect(older.commands).toEqual([]);
    expect(older.state).toBe(edited.state);
  });

  it('downloads a replaced file again and notifies the media settled once more', () => {
    const decided = decidedAlbum();
    expect(decided.commands.filter((c) => c.type === 'media_settled')).toHaveLength(1);
    const replaced = run([arrive(t0 + 500, photo(2, { fileUniqueId: 'other', caption: 'new photo', history: [version(null, true)] }))], {
      from: decided.state,
      profile: telegram,
    });
    expect(replaced.commands.map((c) => c.type)).toEqual(['download', 'edited']);
    expect(replaced.state.children[1]?.attachments[0]?.status).toBe('pending');
    const settled = run([settle('2', 0)], { from: replaced.state, profile: telegram });
    expect(settled.commands).toEqual([{ type: 'media_settled', decision: decided.state.decisions[0], notice: 2 }]);
  });

  it('takes an edit of a child no decision includes yet without notifying it', () => {
    const { state } = run([arrive(t0, photo(1, { caption: 'a' }))], { profile: telegram });
    const edited = run([arrive(t0 + 10, photo(1, { caption: 'b', history: [version('a', false, t0 + 10)] }))], {
      from: state,
      profile: telegram,
    });
    expect(edited.commands).toEqual([]);
    expect(edited.state.children[0]?.arrival.caption).toBe('b');
    const decided = run([tick(t0 + 110)], { from: edited.state, profile: telegram });
    expect(decisionsOf(decided.commands)).toHaveLength(1);
    expect(decided.commands.some((c) => c.type === 'edited')).toBe(false);
  });

  it('on a fresh run, notifies the edits stored after the latest decision that no run notified', () => {
    const decision: DecisionView = {
      seq: 1,
      trigger: 'quiet_period',
      childMessageIds: ['1', '2', '3'],
      decidedAt: new Date(t0 + 100).toISOString(),
    };
    const stored = (arrival: ChildArrival): ChildRecord => ({
      arrival,
      attachments: [{ position: 0, status: 'downloaded', contentType: 'image/jpeg', bytes: 3, sha256: 'abc', error: null }],
    });
    const { commands } = restoreState(
      {
        decisions: [decision],
        children: [
          stored(photo(1, { caption: 'c', history: [version('a', false, t0 + 50), version('b', false, t0 + 200)] })),
          stored(photo(2, { caption: 'y', history: [version('x', false, t0 + 300)] })),
          stored(photo(3, { caption: 'q', history: [version('p', false, t0 + 400)] })),
        ],
        reviewReasons: [],
        reviewResolved: null,
        mediaSettledNotices: 1,
        editNotices: { '3': 1 },
      },
      t0 + 10_000,
      timings,
      telegram,
    );
    expect(commands.flatMap((c) => (c.type === 'edited' ? [[c.edit.messageId, c.edit.version, c.edit.caption]] : []))).toEqual([
      ['1', 2, 'c'],
      ['2', 1, 'y'],
    ]);
  });

  it('notifies a decided child withdrawn once, under the word of how it was withdrawn; an arrival without one (LINE before Bot API 10) is unsent', () => {
    const decided = decidedAlbum();
    const [first] = decisionsOf(decided.commands);
    const at = new Date(t0 + 1_000).toISOString();
    const withdrawn = run(
      [
        arrive(t0 + 1_000, { ...photo(1, { caption: 'trip' }), withdrawnAt: at, withdrawal: 'deleted' }),
        arrive(t0 + 1_100, { ...photo(1, { caption: 'trip' }), withdrawnAt: at, withdrawal: 'deleted' }),
        arrive(t0 + 1_200, { ...photo(2), withdrawnAt: at }),
      ],
      { from: decided.state, profile: telegram },
    );
    expect(withdrawn.commands).toEqual([
      { type: 'unsent', decision: first!.decision, unsent: { messageId: '1', withdrawnAt: at, change: 'deleted' } },
      { type: 'unsent', decision: first!.decision, unsent: { messageId: '2', withdrawnAt: at } },
    ]);
    expect(withdrawn.state.children.map((c) => [c.arrival.withdrawnAt, c.arrival.withdrawal])).toEqual([
      [at, 'deleted'],
      [at, undefined],
    ]);
  });

  it('on a fresh run, notifies a withdrawal stored after the latest decision that no run notified, under its word', () => {
    const decision: DecisionView = {
      seq: 1,
      trigger: 'quiet_period',
      childMessageIds: ['1', '2'],
      decidedAt: new Date(t0 + 100).toISOString(),
    };
    const at = new Date(t0 + 500).toISOString();
    const stored = (arrival: ChildArrival): ChildRecord => ({
      arrival,
      attachments: [{ position: 0, status: 'downloaded', contentType: 'image/jpeg', bytes: 3, sha256: 'abc', error: null }],
    });
    const restored = (unsentNotices: string[]) =>
      restoreState(
        {
          decisions: [decision],
          children: [
            stored({ ...photo(1), withdrawnAt: at, withdrawal: 'deleted' }),
            stored({ ...photo(2), withdrawnAt: at, withdrawal: 'unsent' }),
          ],
          reviewReasons: [],
          reviewResolved: null,
          mediaSettledNotices: 1,
          editNotices: {},
          unsentNotices,
        },
        t0 + 10_000,
        timings,
        telegram,
      ).commands.flatMap((c) => (c.type === 'unsent' ? [c.unsent] : []));
    expect(restored([])).toEqual([
      { messageId: '1', withdrawnAt: at, change: 'deleted' },
      { messageId: '2', withdrawnAt: at, change: 'unsent' },
    ]);
    expect(restored(['1'])).toEqual([{ messageId: '2', withdrawnAt: at, change: 'unsent' }]);
  });

  /** Telegram albums: 10 to 14 distinct numeric message ids, their dates in any order, delivered in batches with duplicates. */
  const telegramAlbum = fc
    .uniqueArray(fc.integer({ min: 1, max: 5_000 }), { minLength: 10, maxLength: 14 })
    .chain((ids) => fc.tuple(fc.constant(ids), fc.array(fc.nat(600), { minLength: ids.length, maxLength: ids.length })))
    .map(([ids, seconds]) => ids.map((id, i) => photo(id, { sentAt: new Date(t0 + seconds[i]! * 1000).toISOString() })));

  it('decides album_full exactly when the tenth distinct child arrives, with every child present then', () => {
    fc.assert(
      fc.property(
        telegramAlbum.chain((children) => fc.tuple(fc.constant(children), deliveries(children), fc.array(fc.integer({ min: 0, max: 99 })))),
        ([, batches, gaps]) => {
          let state = initialState();
          let now = t0;
          const seen = new Set<string>();
          let expected: { at: number; ids: Set<string> } | null = null;
          const decisions: DecisionView[] = [];
          batches.forEach((batch, i) => {
            now += gaps[i % Math.max(gaps.length, 1)] ?? 0;
            for (const arrival of batch) seen.add(arrival.messageId);
            if (!expected && seen.size >= 10) expected = { at: now, ids: new Set(seen) };
            const transition = step(state, arrive(now, ...batch), timings, telegram);
            state = transition.state;
            decisions.push(...decisionsOf(transition.commands).map((c) => c.decision));
          });
          const first = decisions[0]!;
          expect(expected).not.toBeNull();
          expect(first.trigger).toBe('album_full');
          expect(first.decidedAt).toBe(new Date(expected!.at).toISOString());
          expect(new Set(first.childMessageIds)).toEqual(expected!.ids);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('lists the children of every decision, and of the view, in numeric message_id order whatever their dates', () => {
    fc.assert(
      fc.property(telegramAlbum, fc.integer({ min: 1, max: 9 }), (children, decidedWith) => {
        const first = run([arrive(t0, ...children.slice(0, decidedWith)), tick(t0 + 1_000)], { profile: telegram });
        const late = run([arrive(t0 + 2_000, ...children.slice(decidedWith)), tick(t0 + 3_000)], { from: first.state, profile: telegram });
        const numeric = (ids: string[]) => [...ids].sort((a, b) => Number(a) - Number(b));
        const decisions = [...decisionsOf(first.commands), ...decisionsOf(late.commands)].map((c) => c.decision);
        expect(decisions.map((d) => d.trigger)).toEqual(['quiet_period', 'late_item']);
        for (const decision of decisions) expect(decision.childMessageIds).toEqual(numeric(decision.childMessageIds));
        const view = buildAlbumView({
          workflowId: 'album:x',
          key: { workspace: 'ws', provider: 'telegram', accountId: '1', conversationId: '2', albumId: '3' },
          children: late.state.children.map(childWithOutcomesOf),
          decisions: late.state.decisions,
          reviewReasons: [],
          reviewResolved: null,
          closed: false,
          childOrder: telegram.childOrder,
        });
        expect(view.children.map((c) => c.messageId)).toEqual(numeric(children.map((c) => c.messageId)));
      }),
      { numRuns: 200 },
    );
  });
});

describe('album view', () => {
  const key = { workspace: 'ws', provider: 'whatsapp', accountId: 'acc', conversationId: 'conv', albumId: 'alb' };
  const attachment = (position: number, status: AttachmentView['status']): AttachmentView => ({
    position,
    status,
    contentType: null,
    bytes: null,
    sha256: null,
    error: null,
  });
  const childWithOutcomes = (messageId: string, spec: Partial<ChildWithOutcomes>): ChildWithOutcomes => ({
    messageId,
    index: null,
    total: null,
    metadataInvalid: false,
    albumMeta: null,
    caption: null,
    sentAt: null,
    receivedAt: '2026-09-29T10:00:00Z',
    attachments: [],
    history: [],
    ...spec,
  });

  it('orders children by usable index, then sentAt, then message id, and shows index as received', () => {
    const view = buildAlbumView({
      workflowId: 'album:x',
      key,
      children: [
        childWithOutcomes('z', { index: null, metadataInvalid: true, albumMeta: { index: 'two' } }),
        childWithOutcomes('b', { index: 1, sentAt: '2026-09-29T10:00:05Z', albumMeta: { index: 1 } }),
        childWithOutcomes('a', { index: 1, sentAt: '2026-09-29T10:00:05.000Z', albumMeta: { index: 1 } }),
        childWithOutcomes('c', { index: 1, sentAt: '2026-09-29T10:00:01+00:00', albumMeta: { index: 1 } }),
        childWithOutcomes('y', { index: 0, albumMeta: { index: 0 } }),
        childWithOutcomes('x', { index: null, albumMeta: null, sentAt: '2026-09-29T09:00:00Z' }),
      ],
      decisions: [],
      reviewReasons: ['invalid_metadata'],
      reviewResolved: null,
      closed: false,
      childOrder: 'index',
    });
    expect(view.children.map((c) => [c.messageId, c.index])).toEqual([
      ['y', 0],
      ['c', 1],
      ['a', 1],
      ['b', 1],
      ['x', null],
      ['z', 'two'],
    ]);
    expect(view.children[1]?.sentAt).toBe('2026-09-29T10:00:01.000Z');
    expect(view.children[0]?.receivedAt).toBe('2026-09-29T10:00:00.000Z');
    expect(view.review).toEqual({ required: true, reasons: ['duplicate_index', 'invalid_metadata'] });
    expect(view.state).toBe('collecting');
  });

  it('summarizes media and the expected total', () => {
    const decisions: DecisionView[] = [
      { seq: 2, trigger: 'late_item', childMessageIds: ['a', 'b', 'c'], decidedAt: '2026-09-29T10:01:00Z' },
      { seq: 1, trigger: 'max_wait', childMessageIds: ['a', 'b'], decidedAt: '2026-09-29T10:00:30Z' },
    ];
    const view = buildAlbumView({
      workflowId: 'album:x',
      key,
      children: [
        childWithOutcomes('a', { index: 0, total: 3, attachments: [attachment(1, 'failed'), attachment(0, 'downloaded')] }),
        childWithOutcomes('b', {
          index: 1,
          total: 3,
          attachments: [attachment(0, 'pending'), attachment(1, 'expired'), attachment(2, 'unavailable')],
        }),
        childWithOutcomes('c', { index: 2, attachments: [attachment(0, 'downloaded')] }),
      ],
      decisions,
      reviewReasons: ['late_item', 'total_conflict', 'late_item'],
      reviewResolved: null,
      closed: true,
      childOrder: 'index',
    });
    expect(view.media).toEqual({ total: 6, pending: 1, downloaded: 2, failed: 1, expired: 1, unavailable: 1 });
    expect(view.expectedTotal).toBe(3);
    expect(view.distinctChildren).toBe(3);
    expect(view.expectedCountReached).toBe(true);
    expect(view.state).toBe('closed');
    expect(view.review.reasons).toEqual(['total_conflict', 'late_item']);
    expect(view.decisions.map((d) => [d.seq, d.decidedAt])).toEqual([
      [1, '2026-09-29T10:00:30.000Z'],
      [2, '2026-09-29T10:01:00.000Z'],
    ]);
    expect(view.children[0]?.attachments.map((a) => a.position)).toEqual([0, 1]);
  });

  it('reports no expected total when totals conflict, and the conflict before any reason is recorded', () => {
    const view = buildAlbumView({
      workflowId: 'album:x',
      key,
      children: [childWithOutcomes('a', { index: 0, total: 2 }), childWithOutcomes('b', { index: 1, total: 3 })],
      decisions: [{ seq: 1, trigger: 'quiet_period', childMessageIds: ['a', 'b'], decidedAt: '2026-09-29T10:00:30Z' }],
      reviewReasons: [],
      reviewResolved: null,
      closed: false,
      childOrder: 'index',
    });
    expect(view.expectedTotal).toBeNull();
    expect(view.expectedCountReached).toBe(false);
    expect(view.state).toBe('processed');
    expect(view.review).toEqual({ required: true, reasons: ['total_conflict'] });
  });

  it('builds the standalone message body', () => {
    const view = buildMessageView({
      workflowId: 'message:x',
      key: { ...key, messageId: 'm' },
      child: childWithOutcomes('m', { caption: 'hi', attachments: [attachment(0, 'downloaded')] }),
      decisions: [{ seq: 1, trigger: 'standalone', childMessageIds: ['m'], decidedAt: '2026-09-29T10:00:00Z' }],
      closed: true,
    });
    expect(view.state).toBe('closed');
    expect(view.message?.caption).toBe('hi');
    expect(view.media).toEqual({ total: 1, pending: 0, downloaded: 1, failed: 0, expired: 0, unavailable: 0 });
  });
});
