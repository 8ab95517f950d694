import { describe, expect, it } from 'vitest';
import type { QueuedChild } from '../../src/db/children.js';
import type { OutboxRow } from '../../src/db/outbox.js';
import { defaultSignalPlan, maxChildrenPerSignal, planSignals, rowsByWorkflow, type SignalPlan } from '../../src/dispatcher/batches.js';
import type { AlbumTimings } from '../../src/domain/types.js';

const timings: AlbumTimings = { quietPeriodMs: 2000, maxWaitMs: 30000, lateWindowMs: 86400000, lateItemPolicy: 'refresh' };
const plan: SignalPlan = { ...defaultSignalPlan, timings };
const scope = { workspace: 'ws', provider: 'whatsapp', accountId: 'acc', conversationId: 'conv' };

function stored(messagePk: string, albumId: string | null, overrides: Partial<QueuedChild['key']> = {}): QueuedChild {
  const key = { ...scope, messageId: `m${messagePk}`, ...overrides };
  return {
    messagePk,
    key,
    albumPk: albumId === null ? null : `pk-${albumId}`,
    albumId,
    albumSource: albumId === null ? null : 'unifyport',
    arrival: {
      messageId: key.messageId,
      index: null,
      total: null,
      metadataInvalid: false,
      albumMeta: null,
      caption: null,
      sentAt: null,
      receivedAt: '2026-09-29T10:00:00.000Z',
      attachments: [],
      history: [],
    },
  };
}

const row = (id: number, messagePk: string): OutboxRow => ({ id: String(id), messagePk, ageMs: 0, traceparent: null });

describe('planSignals', () => {
  it('sends one signal per album with all its pending children, and album-less children to their message workflow', () => {
    const children = [stored('1', 'alb'), stored('2', null), stored('3', 'alb'), stored('4', 'alb', { conversationId: 'other' })];
    const batches = planSignals([row(10, '1'), row(11, '2'), row(12, '3'), row(13, '4')], children, plan);

    expect(batches.map((b) => [b.target.workflowType, b.target.workflowId, b.children.map((c) => c.messageId), b.outboxIds])).toEqual([
      ['albumWorkflow', 'album:ws:whatsapp:acc:conv:alb', ['m1', 'm3'], ['10', '12']],
      ['messageWorkflow', 'message:ws:whatsapp:acc:conv:m2', ['m2'], ['11']],
      ['albumWorkflow', 'album:ws:whatsapp:acc:other:alb', ['m4'], ['13']],
    ]);
    expect(batches[0]!.target.input).toEqual({
      key: { ...scope, albumId: 'alb' },
      timings,
      profile: { maxChildren: null, childOrder: 'index' },
    });
    expect(batches[1]!.target.input).toEqual({ key: { ...scope, messageId: 'm2' }, timings });
    expect(batches[0]!.scope).toEqual(scope);
  });

  it('carries a child once however many outbox rows it has, and settles all of them', () => {
    const batches = planSignals([row(1, '7'), row(2, '8'), row(3, '7')], [stored('7', 'alb'), stored('8', 'alb')], plan);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.children.map((c) => c.messageId)).toEqual(['m7', 'm8']);
    expect(batches[0]!.outboxIds.sort()).toEqual(['1', '2', '3']);
  });

  it(`splits an album with more than ${maxChildrenPerSignal} pending children into several signals`, () => {
    const count = maxChildrenPerSignal * 2 + 1;
    const children = Array.from({ length: count }, (_, i) => stored(String(i), 'big'));
    const batches = planSignals(
      children.map((c, i) => row(i, c.messagePk)),
      children,
      plan,
    );
    expect(batches.map((b) => b.children.length)).toEqual([maxChildrenPerSignal, maxChildrenPerSignal, 1]);
    expect(new Set(batches.map((b) => b.target.workflowId)).size).toBe(1);
    expect(batches.flatMap((b) => b.outboxIds)).toHaveLength(count);
  });

  it('starts another signal before one would carry more than the byte limit', () => {
    const children = Array.from({ length: 5 }, (_, i) => {
      const child = stored(String(i), 'large');
      child.arrival.caption = 'x'.repeat(1000);
      return child;
    });
    const size = JSON.stringify(children[0]!.arrival).length;
    const batches = planSignals(
      children.map((c, i) => row(i, c.messagePk)),
      children,
      { ...plan, maxBytes: size * 2 },
    );
    expect(batches.map((b) => b.children.length)).toEqual([2, 2, 1]);
    expect(batches.map((b) => b.outboxIds)).toEqual([['0', '1'], ['2', '3'], ['4']]);
  });

  it("sends one signal per child when a signal carries one at most (the bench's cost baseline)", () => {
    const children = [stored('1', 'alb'), stored('2', 'alb'), stored('3', null)];
    const batches = planSignals(
      children.map((c, i) => row(i, c.messagePk)),
      children,
      { ...plan, maxChildren: 1 },
    );
    expect(batches.map((b) => b.children.map((c) => c.messageId))).toEqual([['m1'], ['m2'], ['m3']]);
    const coalesced = planSignals(
      children.map((c, i) => row(i, c.messagePk)),
      children,
      plan,
    );
    expect(coalesced.map((b) => b.children.length)).toEqual([2, 1]);
  });

  it("groups the rows by the workflow they signal, every row kept, in order of each workflow's first row", () => {
    const children = [stored('1', 'alb'), stored('2', null), stored('3', 'alb')];
    const groups = rowsByWorkflow([row(10, '1'), row(11, '2'), row(12, '3'), row(13, '1')], children, plan);
    expect(groups.map((g) => [g.target.workflowId, g.albumPk, g.rows.map((r) => r.id)])).toEqual([
      ['album:ws:whatsapp:acc:conv:alb', 'pk-alb', ['10', '12', '13']],
      ['message:ws:whatsapp:acc:conv:m2', null, ['11']],
    ]);
  });

  it('fails loudly when a row refers to a child that was not loaded', () => {
    expect(() => planSignals([row(1, '99')], [], plan)).toThrow(/message 99/);
  });
});
