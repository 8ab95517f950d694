import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import type { MessageWorkflowStatus } from '../../src/domain/album-view.js';
import { statusQuery } from '../../workflows/definitions.js';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import {
  eventually,
  newAlbumKey,
  saveHistory,
  signalAlbum,
  signalMessage,
  storeAlbumChildren,
  storeStandaloneMessage,
  workflowTestBed,
} from '../harness/albums.js';
import { albumRow, storedDecisions, storedNotifications } from '../harness/rows.js';
import { startTestWorker, testConfig } from '../harness/env.js';
import { unique } from '../harness/random.js';

const { EventType } = temporal.api.enums.v1;

describe('album and message workflow lifecycle against the real PostgreSQL and Temporal', () => {
  const config = testConfig();
  const workspace = unique('ws');
  const bed = workflowTestBed(config);

  it('starts a new run for a child that arrives after the workflow closed and records it as late', async () => {
    const { pool, client } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const [a0, a1] = await storeAlbumChildren(pool, key, [{ messageId: 'a0' }, { messageId: 'a1' }]);
    const firstRun = await signalAlbum(client, config, key, [a0!, a1!]);
    await firstRun.result();
    expect((await albumRow(pool, workflowId)).state).toBe('closed');

    const [a2] = await storeAlbumChildren(pool, key, [{ messageId: 'a2' }]);
    const secondRun = await signalAlbum(client, config, key, [a2!]);
    expect(secondRun.signaledRunId).not.toBe(firstRun.signaledRunId);
    const result = (await secondRun.result()) as AlbumView;
    expect(await storedDecisions(pool, workflowId)).toEqual([
      { seq: 1, trigger: 'quiet_period', child_message_ids: ['a0', 'a1'] },
      { seq: 2, trigger: 'late_item', child_message_ids: ['a0', 'a1', 'a2'] },
    ]);
    expect(result.decisions.map((d) => d.seq)).toEqual([1, 2]);
    expect(result.children.map((c) => c.messageId)).toEqual(['a0', 'a1', 'a2']);
    expect((await albumRow(pool, workflowId)).state).toBe('closed');
    const notifications = await storedNotifications(pool, workflowId);
    expect(notifications.filter((n) => n.type === 'album.ready').map((n) => n.id)).toEqual([`${workflowId}/1`]);
    expect(notifications.filter((n) => n.type === 'album.updated').map((n) => n.id)).toEqual([`${workflowId}/2`]);
    await saveHistory('album-late-after-close', client.workflow.getHandle(workflowId, secondRun.signaledRunId));

    const thirdRun = await signalAlbum(client, config, key, [a0!]);
    const unchanged = (await thirdRun.result()) as AlbumView;
    expect(unchanged.state).toBe('closed');
    expect(unchanged.decisions).toEqual(result.decisions);
    expect(await storedDecisions(pool, workflowId)).toHaveLength(2);
    expect((await storedNotifications(pool, workflowId)).map((n) => n.id)).toEqual(notifications.map((n) => n.id));
  });

  it('continues as new mid-album, carrying its state', async () => {
    const { pool, client, media } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const children = await storeAlbumChildren(pool, key, [
      { messageId: 'n0', index: 0, total: 4, urls: [media.file('n0')] },
      { messageId: 'n1', index: 1, total: 4 },
    ]);
    const first = await signalAlbum(client, config, key, [children[0]!], { continueAsNewAfterSignals: 2 });
    await signalAlbum(client, config, key, [children[1]!], { continueAsNewAfterSignals: 2 });
    await eventually(async () => expect((await client.workflow.getHandle(workflowId).describe()).runId).not.toBe(first.signaledRunId));

    const carried = await client.workflow.getHandle(workflowId).query(statusQuery);
    expect(carried.children.map((c) => c.messageId)).toEqual(['n0', 'n1']);
    expect(carried.media.downloaded).toBe(1);

    const rest = await storeAlbumChildren(pool, key, [
      { messageId: 'n3', index: 3, total: 4 },
      { messageId: 'n2', index: 2, total: 4 },
    ]);
    await signalAlbum(client, config, key, [rest[0]!], { continueAsNewAfterSignals: 2 });
    await signalAlbum(client, config, key, [rest[1]!], { continueAsNewAfterSignals: 2 });

    const result = (await first.result()) as AlbumView;
    expect(result.decisions.map((d) => [d.trigger, d.childMessageIds])).toEqual([['expected_count_reached', ['n0', 'n1', 'n2', 'n3']]]);
    expect(await storedDecisions(pool, workflowId)).toEqual([
      { seq: 1, trigger: 'expected_count_reached', child_message_ids: ['n0', 'n1', 'n2', 'n3'] },
    ]);
    expect((await storedNotifications(pool, workflowId)).filter((n) => n.type === 'album.ready')).toHaveLength(1);

    const firstRunHistory = await client.workflow.getHandle(workflowId, first.signaledRunId).fetchHistory();
    expect(firstRunHistory.events?.at(-1)?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    await saveHistory('album-continue-as-new', client.workflow.getHandle(workflowId, first.signaledRunId));
  });

  it('completes an album correctly when its worker is replaced mid-album', async () => {
    const { pool, client, media } = bed;
    const ownConfig = testConfig();
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    let current = await startTestWorker(ownConfig, pool);
    try {
      const [r0] = await storeAlbumChildren(pool, key, [{ messageId: 'r0', index: 0, total: 2, urls: [media.file('r0')] }]);
      const handle = await signalAlbum(client, ownConfig, key, [r0!]);
      await eventually(async () => {
        const status = await handle.query(statusQuery);
        expect(status.distinctChildren).toBe(1);
        expect(status.media.downloaded).toBe(1);
      });
      await current.stop();

      const [r1] = await storeAlbumChildren(pool, key, [{ messageId: 'r1', index: 1, total: 2 }]);
      await signalAlbum(client, ownConfig, key, [r1!]);
      current = await startTestWorker(ownConfig, pool);

      const result = (await handle.result()) as AlbumView;
      expect(result.state).toBe('closed');
      expect(await storedDecisions(pool, workflowId)).toEqual([
        { seq: 1, trigger: 'expected_count_reached', child_message_ids: ['r0', 'r1'] },
      ]);
      expect((await storedNotifications(pool, workflowId)).map((n) => n.type)).toEqual(['album.ready', 'album.media_settled']);
      await saveHistory('album-worker-restart', handle);
    } finally {
      await current.stop();
    }
  });

  it('handles a standalone message: standalone decision, downloads, then message.ready once', async () => {
    const { pool, client, media } = bed;
    const key = { workspace, provider: 'telegram', accountId: 'bot_1', conversationId: unique('chat'), messageId: 'solo' };
    const workflowId = messageWorkflowId(key);
    const arrival = await storeStandaloneMessage(pool, key, { caption: 'hello', urls: [media.file('solo'), null] });
    const handle = await signalMessage(client, config, key, arrival);
    const result = (await handle.result()) as MessageWorkflowStatus;
    expect(result.state).toBe('closed');
    expect(result.message?.caption).toBe('hello');
    expect(result.media).toEqual({ total: 2, pending: 0, downloaded: 1, failed: 0, expired: 0, unavailable: 1 });
    expect(await storedDecisions(pool, workflowId)).toEqual([{ seq: 1, trigger: 'standalone', child_message_ids: ['solo'] }]);
    const notifications = await storedNotifications(pool, workflowId);
    expect(notifications.map((n) => [n.id, n.type])).toEqual([[`${workflowId}/1`, 'message.ready']]);
    expect(notifications[0]?.payload.message?.media).toMatchObject({ downloaded: 1, unavailable: 1 });
    await saveHistory('message-standalone', handle);

    const again = await signalMessage(client, config, key, arrival);
    expect(again.signaledRunId).not.toBe(handle.signaledRunId);
    const repeated = (await again.result()) as MessageWorkflowStatus;
    expect(repeated.decisions).toEqual(result.decisions);
    expect(await storedDecisions(pool, workflowId)).toHaveLength(1);
    expect(await storedNotifications(pool, workflowId)).toHaveLength(1);
  });
});
