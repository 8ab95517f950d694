import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { addCounts, countHistory, noCounts } from '../../bench/temporal-counts.js';

const historiesDir = path.resolve(import.meta.dirname, '../fixtures/histories');

function saved(name: string) {
  const { history } = JSON.parse(fs.readFileSync(path.join(historiesDir, `${name}.json`), 'utf8')) as { history: unknown };
  return historyFromJSON(history);
}

// Expected figures counted by hand from the event lists of the saved histories (event ids in brackets).
describe('counting a workflow history', () => {
  it('counts an album with three children in three signals, downloads, a decision and its close', () => {
    expect(countHistory(saved('album-duplicates-out-of-order'))).toEqual({
      historyEvents: 46,
      workflowTasks: 8, // started [4, 7, 15, 19, 25, 29, 36, 42]; the first [4] completed while loadPrior still ran
      signals: 3, // [2, 17, 27]
      timersStarted: 2, // [11, 38]
      activities: 3, // two download batches [10, 21], one record-and-notify of the decision and its media settled [32]
      localActivities: 2, // loadPrior [9], the closing mark [45]
      searchAttributeUpserts: 2, // the decision [31], the close [44]; the start set the rest
      // The start and its signal-with-start's signal [1, 2]: 1; the signals [17, 27]: 2; activities: 3, each
      // on its first attempt; timers: 2; upserts: 2; the workflow tasks that recorded markers (completed [8]
      // and [43]): 2.
      billableActions: 12,
    });
  });

  it('counts a run that continued as new up to its end, the next run not included', () => {
    expect(countHistory(saved('album-continue-as-new'))).toEqual({
      historyEvents: 18,
      workflowTasks: 3, // [4, 11, 16]
      signals: 2, // [2, 9]
      timersStarted: 1, // [8]
      activities: 1, // [7]
      localActivities: 1, // [6]
      searchAttributeUpserts: 0, // no decision yet: the start set every attribute shown
      // Start and signal-with-start's signal [1, 2]: 1; signal [9]: 1; activity: 1; timer: 1; the marker of
      // task [5]: 1. Continuing as new [18] is billed as the next run's start.
      billableActions: 5,
    });
  });

  it('bills the markers of one workflow task once, retries of activities and local activities, and no TemporalChangeVersion upsert', () => {
    // In the JSON form of saved histories; every event carries its attributes, empty where none matter.
    const history = historyFromJSON({
      events: [
        { eventId: '1', eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', workflowExecutionStartedEventAttributes: {} },
        { eventId: '2', eventType: 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', workflowTaskScheduledEventAttributes: {} },
        { eventId: '3', eventType: 'EVENT_TYPE_WORKFLOW_TASK_STARTED', workflowTaskStartedEventAttributes: {} },
        {
          eventId: '4',
          eventType: 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
          workflowTaskCompletedEventAttributes: { meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 } },
        },
        {
          eventId: '5',
          eventType: 'EVENT_TYPE_MARKER_RECORDED',
          markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: '4' },
        },
        {
          eventId: '6',
          eventType: 'EVENT_TYPE_MARKER_RECORDED',
          markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: '4' },
        },
        {
          eventId: '7',
          eventType: 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
          upsertWorkflowSearchAttributesEventAttributes: { searchAttributes: { indexedFields: { TemporalChangeVersion: {} } } },
        },
        { eventId: '8', eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', activityTaskScheduledEventAttributes: {} },
        { eventId: '9', eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED', workflowExecutionSignaledEventAttributes: {} },
        { eventId: '10', eventType: 'EVENT_TYPE_ACTIVITY_TASK_STARTED', activityTaskStartedEventAttributes: { attempt: 3 } },
        { eventId: '11', eventType: 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED', activityTaskCompletedEventAttributes: {} },
      ],
    });
    expect(countHistory(history)).toEqual({
      historyEvents: 11,
      workflowTasks: 1,
      signals: 1,
      timersStarted: 0,
      activities: 1,
      localActivities: 2,
      searchAttributeUpserts: 0,
      // Start [1]: 1 (a plain start, its task scheduled right after); two local-activity attempts after the
      // first [4]: 2; the markers of task [4]: 1; the activity [8]: 1 and its two retries [10]: 2; the
      // signal [9]: 1.
      billableActions: 8,
    });
  });

  it('sums the counts of several runs field by field', () => {
    const one = countHistory(saved('album-continue-as-new'));
    const two = countHistory(saved('album-duplicates-out-of-order'));
    expect(addCounts(addCounts(noCounts, one), two)).toEqual({
      historyEvents: 64,
      workflowTasks: 11,
      signals: 5,
      timersStarted: 3,
      activities: 4,
      localActivities: 3,
      searchAttributeUpserts: 2,
      billableActions: 17,
    });
  });
});
