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
      historyEvents: 52,
      workflowTasks: 7, // started [4, 13, 22, 27, 31, 40, 46]
      signals: 3, // [2, 11, 29]
      timersStarted: 2, // [10, 42]
      activities: 4, // three downloads [7, 8, 15], one announcement [36]
      localActivities: 2, // loadPrior [6], the closing mark [51]
      searchAttributeUpserts: 4, // [9, 16, 33, 48]; [35, 50] set only TemporalChangeVersion
      // The start and its signal-with-start's signal [1, 2]: 1; the signals [11, 29]: 2; activities: 4, each
      // on its first attempt; timers: 2; upserts: 4; the workflow tasks that recorded markers (completed
      // [5]: a local activity; [32]: a patch; [47]: a patch and a local activity): 3.
      billableActions: 16,
    });
  });

  it('counts a run that continued as new up to its end, the next run not included', () => {
    expect(countHistory(saved('album-continue-as-new'))).toEqual({
      historyEvents: 16,
      workflowTasks: 2, // [5, 14]
      signals: 2, // [2, 4]
      timersStarted: 1, // [10]
      activities: 1, // [8]
      localActivities: 1, // [7]
      searchAttributeUpserts: 1, // [9]
      // Start and signal-with-start's signal [1, 2]: 1; signal [4]: 1; activity: 1; upsert: 1; timer: 1; the
      // marker of task [6]: 1. Continuing as new [16] is billed as the next run's start.
      billableActions: 6,
    });
  });

  it('sums the counts of several runs field by field', () => {
    const one = countHistory(saved('album-continue-as-new'));
    const two = countHistory(saved('album-duplicates-out-of-order'));
    expect(addCounts(addCounts(noCounts, one), two)).toEqual({
      historyEvents: 68,
      workflowTasks: 9,
      signals: 5,
      timersStarted: 3,
      activities: 5,
      localActivities: 3,
      searchAttributeUpserts: 5,
      billableActions: 22,
    });
  });
});
