// What an album costs Temporal, read from its history: the timers, upserts and download activities of an
// album whose children arrive in three signals within its quiet period. Every assertion holds whatever
// the machine's speed: how early the kept timer fires, or whether the downloads finish before the
// decision, changes how many workflow tasks there are, never what each one does.
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { countHistory } from '../../bench/temporal-counts.js';
import { statusQuery } from '../../workflows/definitions.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { DownloadRequest } from '../../src/domain/types.js';
import { eventually, newAlbumKey, signalAlbum, storeAlbumChildren, workflowTestBed } from '../harness/albums.js';
import { storedDecisions } from '../harness/rows.js';
import { testConfig } from '../harness/env.js';
import { unique } from '../harness/random.js';

const { EventType } = proto.temporal.api.enums.v1;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** The events that led to each workflow task (since the previous task completed) and the commands it gave. */
function workflowTasks(events: readonly HistoryEvent[]): Array<{ causes: HistoryEvent[]; commands: HistoryEvent[] }> {
  const tasks: Array<{ causes: HistoryEvent[]; commands: HistoryEvent[] }> = [];
  let causes: HistoryEvent[] = [];
  let current: { causes: HistoryEvent[]; commands: HistoryEvent[] } | undefined;
  for (const event of events) {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        current = { causes, commands: [] };
        tasks.push(current);
        causes = [];
        break;
      default:
        if (current && commandEvents.has(event.eventType!)) current.commands.push(event);
        else causes.push(event);
    }
  }
  return tasks;
}

/** The events of the commands a workflow task completes with (they follow its completion). */
const commandEvents = new Set<proto.temporal.api.enums.v1.EventType>([
  EventType.EVENT_TYPE_TIMER_STARTED,
  EventType.EVENT_TYPE_TIMER_CANCELED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  EventType.EVENT_TYPE_MARKER_RECORDED,
  EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
]);

function attachmentsOf(event: HistoryEvent): DownloadRequest[] {
  const [payload] = event.activityTaskScheduledEventAttributes?.input?.payloads ?? [];
  return defaultPayloadConverter.fromPayload<{ attachments: DownloadRequest[] }>(payload!).attachments;
}

describe('the Temporal cost of an album', () => {
  // A quiet period far longer than the gaps between the signals, so that it ends only after the last one.
  const config = testConfig({ QUIET_PERIOD_MS: '4000', MAX_WAIT_MS: '60000', LATE_WINDOW_MS: '600000' });
  const bed = workflowTestBed(config);

  it("keeps one quiet-period timer while children extend it, upserts at the decision only, and downloads each signal's files with one activity", async () => {
    const { pool, client, media } = bed;
    const key = newAlbumKey(unique('cost'));
    const workflowId = albumWorkflowId(key);
    const signals = [
      [{ messageId: 'p0', urls: [media.file('p0 a'), media.file('p0 b')] }],
      [{ messageId: 'p1', urls: [media.file('p1')] }],
      [{ messageId: 'p2', urls: [media.file('p2')] }],
    ];
    const handle = await signalAlbum(client, config, key, await storeAlbumChildren(pool, key, signals[0]!));
    for (const [sent, children] of signals.slice(1).entries()) {
      // Each signal once the workflow took the previous one: a workflow task of its own.
      await eventually(async () => expect((await handle.query(statusQuery)).distinctChildren).toBe(sent + 1));
      await signalAlbum(client, config, key, await storeAlbumChildren(pool, key, children));
    }
    await eventually(async () => expect(await storedDecisions(pool, workflowId)).toHaveLength(1), 60_000);
    const [decision] = await storedDecisions(pool, workflowId);
    expect(decision).toMatchObject({ trigger: 'quiet_period', child_message_ids: ['p0', 'p1', 'p2'] });
    // The decision is stored while its record-and-notify activity runs; the late window's timer is armed
    // once that activity completed, in a later workflow task: read the history once it is.
    const ofType = (events: readonly HistoryEvent[], type: proto.temporal.api.enums.v1.EventType) =>
      events.filter((event) => event.eventType === type);
    let events: HistoryEvent[] = [];
    await eventually(async () => {
      events = (await handle.fetchHistory()).events ?? [];
      expect(ofType(events, EventType.EVENT_TYPE_TIMER_STARTED).length).toBeGreaterThan(
        ofType(events, EventType.EVENT_TYPE_TIMER_FIRED).length,
      );
    }, 60_000);
    await handle.terminate('test done').catch(() => undefined);

    const counts = countHistory({ events });
    expect(counts.signals).toBe(3);
    const tasks = workflowTasks(events);
    const has = (list: HistoryEvent[], type: proto.temporal.api.enums.v1.EventType) => list.some((event) => event.eventType === type);
    // A timer is never cancelled (a later deadline keeps the running one), so every timer started but the
    // late window's running one has fired; and a signal alone starts none (a timer restarted for each
    // child would be cancelled twice and started in both later signals' tasks).
    expect(ofType(events, EventType.EVENT_TYPE_TIMER_CANCELED)).toEqual([]);
    expect(counts.timersStarted).toBe(1 + ofType(events, EventType.EVENT_TYPE_TIMER_FIRED).length);
    const signalTasks = tasks.slice(1).filter(({ causes }) => has(causes, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED));
    expect(signalTasks).toHaveLength(2);
    for (const { causes, commands } of signalTasks) {
      if (!has(causes, EventType.EVENT_TYPE_TIMER_FIRED)) expect(has(commands, EventType.EVENT_TYPE_TIMER_STARTED)).toBe(false);
    }
    // The search attributes change with the decision alone (the start set the rest).
    expect(counts.searchAttributeUpserts).toBe(1);
    // One download activity per signal, the first signal's two files together; the rest are the
    // decision's record-and-notify (and a later album.media_settled when the files took longer).
    const scheduled = events.filter((event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    const downloads = scheduled.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'downloadAttachments');
    expect(downloads.map((event) => attachmentsOf(event).map(({ key: { messageId }, position }) => `${messageId}#${position}`))).toEqual([
      ['p0#0', 'p0#1'],
      ['p1#0'],
      ['p2#0'],
    ]);
    const others = scheduled
      .filter((event) => !downloads.includes(event))
      .map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name);
    expect(others.length === 1 || others.length === 2).toBe(true);
    expect(new Set(others)).toEqual(new Set(['recordAndNotify']));
  }, 120_000);
});
