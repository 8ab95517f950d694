import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { albumStatusFromDatabase, findAlbum } from '../../src/db/status.js';
import { statusQuery } from '../../workflows/definitions.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumView } from '../../src/domain/types.js';
import { eventually, newAlbumKey, saveHistory, signalAlbum, storeAlbumChildren, workflowTestBed } from '../harness/albums.js';
import { albumRow, storedDecisions, storedNotifications } from '../harness/rows.js';
import { testConfig } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { albumProfileOf } from '../../src/platforms/index.js';

describe('album workflow against the real PostgreSQL and Temporal', () => {
  const config = testConfig();
  const workspace = unique('ws');
  const bed = workflowTestBed(config);

  /** The body the status endpoint builds from PostgreSQL once the workflow closed. */
  async function viewFromPostgres(status: AlbumView): Promise<AlbumView> {
    const { pool } = bed;
    const album = (await findAlbum(pool, status.key))!;
    return albumStatusFromDatabase(pool, album, status.key, { childOrder: albumProfileOf(album.source).childOrder });
  }

  it('deduplicates redelivered children, accepts any order, decides once on the expected count and settles media', async () => {
    const { pool, client, media } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const distinctChildren = (handle: WorkflowHandle) => eventually(async () => (await handle.query(statusQuery)).distinctChildren);
    const [c2] = await storeAlbumChildren(pool, key, [{ messageId: 'm2', index: 2, total: 3, urls: [media.gone(), media.file('two')] }]);
    const handle = await signalAlbum(client, config, key, [c2!]);
    await eventually(async () => expect(await distinctChildren(handle)).toBe(1));

    const [c0] = await storeAlbumChildren(pool, key, [
      { messageId: 'm0', index: 0, total: 3, caption: 'first', urls: [media.file('zero')] },
    ]);
    await signalAlbum(client, config, key, [c2!, c0!]);
    await eventually(async () => expect(await distinctChildren(handle)).toBe(2));
    expect(await storedDecisions(pool, workflowId)).toEqual([]);

    const [c1] = await storeAlbumChildren(pool, key, [{ messageId: 'm1', index: 1, total: 3, urls: [null] }]);
    await signalAlbum(client, config, key, [c1!, c0!, c2!]);

    const decisions = await eventually(async () => {
      const rows = await storedDecisions(pool, workflowId);
      expect(rows).toHaveLength(1);
      return rows;
    });
    expect(decisions).toEqual([{ seq: 1, trigger: 'expected_count_reached', child_message_ids: ['m0', 'm1', 'm2'] }]);

    const running = await handle.query(statusQuery);
    // The query's payload itself, as every client (the Temporal CLI and UI included) receives it: empty lists are [].
    const raw = await client.workflowService.queryWorkflow({
      namespace: config.temporal.namespace,
      execution: { workflowId },
      query: { queryType: 'status' },
    });
    const payload = JSON.parse(Buffer.from(raw.queryResult!.payloads![0]!.data!).toString()) as AlbumView;
    expect(payload.review.reasons).toEqual([]);
    expect(payload.children.find((c) => c.messageId === 'm1')?.attachments).toHaveLength(1);
    expect(running.distinctChildren).toBe(3);
    expect(running.expectedTotal).toBe(3);
    expect(running.expectedCountReached).toBe(true);
    expect(running.children.map((c) => c.messageId)).toEqual(['m0', 'm1', 'm2']);

    const result = (await handle.result()) as AlbumView;
    expect(result.state).toBe('closed');
    expect(result.media).toEqual({ total: 4, pending: 0, downloaded: 2, failed: 0, expired: 1, unavailable: 1 });
    expect(result.review).toEqual({ required: false, reasons: [] });
    expect(await viewFromPostgres(result)).toEqual(result);
    expect(await albumRow(pool, workflowId)).toEqual({ state: 'closed', review_reasons: [] });

    const notifications = await storedNotifications(pool, workflowId);
    expect(notifications.map((n) => [n.id, n.type])).toEqual([
      [`${workflowId}/1`, 'album.ready'],
      [`${workflowId}/1/album.media_settled`, 'album.media_settled'],
    ]);
    const [ready, settled] = notifications;
    expect(ready?.id).toBe(`${workflowId}/1`);
    expect(ready?.payload.decision).toMatchObject({ seq: 1, trigger: 'expected_count_reached', childMessageIds: ['m0', 'm1', 'm2'] });
    expect(settled?.payload.album?.media).toMatchObject({ pending: 0, downloaded: 2, expired: 1, unavailable: 1 });
    await saveHistory('album-duplicates-out-of-order', handle);
  });

  it('keeps albums with the same album id in different conversations apart', async () => {
    const { pool, client } = bed;
    const first = newAlbumKey(workspace, 'shared');
    const second = newAlbumKey(workspace, 'shared');
    const [a0, a1] = await storeAlbumChildren(pool, first, [
      { messageId: 'x0', index: 0, total: 2 },
      { messageId: 'x1', index: 1, total: 2 },
    ]);
    const [b0, b1] = await storeAlbumChildren(pool, second, [
      { messageId: 'x0', index: 0, total: 2 },
      { messageId: 'y1', index: 1, total: 2 },
    ]);
    const handles = await Promise.all([signalAlbum(client, config, first, [a0!, a1!]), signalAlbum(client, config, second, [b0!, b1!])]);
    const [firstResult, secondResult] = (await Promise.all(handles.map((h) => h.result()))) as AlbumView[];
    expect(firstResult?.decisions.map((d) => d.childMessageIds)).toEqual([['x0', 'x1']]);
    expect(secondResult?.decisions.map((d) => d.childMessageIds)).toEqual([['x0', 'y1']]);
    expect(await storedDecisions(pool, albumWorkflowId(first))).toEqual([
      { seq: 1, trigger: 'expected_count_reached', child_message_ids: ['x0', 'x1'] },
    ]);
    expect(await storedDecisions(pool, albumWorkflowId(second))).toEqual([
      { seq: 1, trigger: 'expected_count_reached', child_message_ids: ['x0', 'y1'] },
    ]);
  });

  it('decides on a quiet period when no total is known', async () => {
    const { pool, client } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const [c0, c1] = await storeAlbumChildren(pool, key, [{ messageId: 'q0' }, { messageId: 'q1' }]);
    const handle = await signalAlbum(client, config, key, [c1!]);
    await signalAlbum(client, config, key, [c0!]);
    const result = (await handle.result()) as AlbumView;
    expect(await storedDecisions(pool, workflowId)).toEqual([{ seq: 1, trigger: 'quiet_period', child_message_ids: ['q0', 'q1'] }]);
    expect(result.expectedTotal).toBeNull();
    expect(result.children.map((c) => c.messageId)).toEqual(['q0', 'q1']);
    expect((await storedNotifications(pool, workflowId)).map((n) => n.type)).toEqual(['album.ready', 'album.media_settled']);
    await saveHistory('album-quiet-period', handle);
  });

  it('flags a conflicting total and a duplicate index for review and drops nothing', async () => {
    const { pool, client } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const children = await storeAlbumChildren(pool, key, [
      { messageId: 'd0', index: 0, total: 3 },
      { messageId: 'd1', index: 0, total: 3 },
      { messageId: 'd2', index: 1, total: 4 },
      { messageId: 'd3', albumMeta: { index: 'two', total: 3 }, total: 3, metadataInvalid: true },
    ]);
    const handle = await signalAlbum(client, config, key, children);
    const running = await eventually(async () => {
      const status = await handle.query(statusQuery);
      expect(status.distinctChildren).toBe(4);
      return status;
    });
    expect(running.review).toEqual({ required: true, reasons: ['total_conflict', 'duplicate_index', 'invalid_metadata'] });
    expect(running.expectedTotal).toBeNull();
    expect(running.children.map((c) => [c.messageId, c.index])).toEqual([
      ['d0', 0],
      ['d1', 0],
      ['d2', 1],
      ['d3', 'two'],
    ]);

    const result = (await handle.result()) as AlbumView;
    expect(await storedDecisions(pool, workflowId)).toEqual([
      { seq: 1, trigger: 'quiet_period', child_message_ids: ['d0', 'd1', 'd2', 'd3'] },
    ]);
    expect(await albumRow(pool, workflowId)).toEqual({
      state: 'closed',
      review_reasons: ['total_conflict', 'duplicate_index', 'invalid_metadata'],
    });
    expect(await viewFromPostgres(result)).toEqual(result);
    await saveHistory('album-review', handle);
  });

  it('ends a total that is never reached with max_wait', async () => {
    const { pool, client } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const children = await storeAlbumChildren(pool, key, [
      { messageId: 'w0', index: 0, total: 3 },
      { messageId: 'w2', index: 2, total: 3 },
    ]);
    const handle = await signalAlbum(client, config, key, children);
    const collecting = await handle.query(statusQuery);
    expect(collecting.decisions).toEqual([]);
    const result = (await handle.result()) as AlbumView;
    expect(await storedDecisions(pool, workflowId)).toEqual([{ seq: 1, trigger: 'max_wait', child_message_ids: ['w0', 'w2'] }]);
    expect(result.expectedCountReached).toBe(false);
    expect(result.expectedTotal).toBe(3);
  });

  it('records a late item after processing as late_item and never sends a second album.ready', async () => {
    const { pool, client } = bed;
    const key = newAlbumKey(workspace);
    const workflowId = albumWorkflowId(key);
    const [c0, c1] = await storeAlbumChildren(pool, key, [
      { messageId: 'l0', index: 0, total: 2 },
      { messageId: 'l1', index: 1, total: 2 },
    ]);
    const handle = await signalAlbum(client, config, key, [c0!, c1!]);
    await eventually(async () => expect(await storedDecisions(pool, workflowId)).toHaveLength(1));
    const [late] = await storeAlbumChildren(pool, key, [{ messageId: 'l2', index: 2, total: 2 }]);
    await signalAlbum(client, config, key, [late!, c0!]);

    const result = (await handle.result()) as AlbumView;
    expect(await storedDecisions(pool, workflowId)).toEqual([
      { seq: 1, trigger: 'expected_count_reached', child_message_ids: ['l0', 'l1'] },
      { seq: 2, trigger: 'late_item', child_message_ids: ['l0', 'l1', 'l2'] },
    ]);
    expect(result.review.reasons).toEqual(['total_conflict']);
    const notifications = await storedNotifications(pool, workflowId);
    expect(notifications.filter((n) => n.type === 'album.ready').map((n) => n.id)).toEqual([`${workflowId}/1`]);
    const updated = notifications.filter((n) => n.type === 'album.updated');
    expect(updated.map((n) => n.id)).toEqual([`${workflowId}/2`]);
    expect(updated[0]?.payload.decision).toMatchObject({ seq: 2, lateChildMessageIds: ['l2'], lateItemPolicy: 'refresh' });
    expect(notifications.map((n) => n.id)).toContain(`${workflowId}/2/album.media_settled`);
    await saveHistory('album-late-item', handle);
  });
});
