// What an album costs Temporal, counted from its history: the timers, upserts and download activities
// of an album whose children arrive in three signals within its quiet period.
import { describe, expect, it } from 'vitest';
import { countHistory } from '../../bench/temporal-counts.js';
import { statusQuery } from '../../workflows/definitions.js';
import { albumWorkflowId } from '../../workflows/keys.js';
import { eventually, newAlbumKey, signalAlbum, storeAlbumChildren, storedDecisions, workflowTestBed } from '../helpers/albums.js';
import { testConfig, unique } from '../helpers/env.js';

describe('the Temporal cost of an album', () => {
  // A quiet period far longer than the gaps between the signals, so that it ends only after the last one.
  const config = testConfig({ QUIET_PERIOD_MS: '4000', MAX_WAIT_MS: '60000', LATE_WINDOW_MS: '600000' });
  const bed = workflowTestBed(config);

  it('keeps one quiet-period timer while children extend it, upserts at the decision only, and downloads each signal\'s files with one activity', async () => {
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

    const counts = countHistory(await handle.fetchHistory());
    expect(counts.signals).toBe(3);
    // The first quiet-period timer fired early and the rest was armed: two timers, not one per signal;
    // then the late window's.
    expect(counts.timersStarted).toBe(3);
    // The search attributes change with the decision alone (the start set the rest).
    expect(counts.searchAttributeUpserts).toBe(1);
    // One download activity per signal, two of whose files travel together; and the decision's record-and-notify.
    expect(counts.activities).toBe(4);
    await handle.terminate('test done').catch(() => undefined);
  }, 120_000);
});
