import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PurgeCounts } from '../../src/domain/lifetime.js';
import { openMediaStore, type MediaStore } from '../../src/media/store.js';
import { connectClient } from '../../src/temporal/connection.js';
import { fillExpiredAlbums, workspaceLeftovers } from '../harness/expired-albums.js';
import { unique } from '../harness/random.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';
import type { retentionWorkflow } from '../../workflows/lifetime.js';
import { purgeBatch } from '../../workflows/lifetime-types.js';
import { formatTable, seconds, waitFor } from './report.js';

const albums = 6_000;
const files = 300;

describe('retention: a worker killed mid-purge', () => {
  let stack: ProcessStack;
  let store: MediaStore;
  let client: Client;

  beforeAll(async () => {
    stack = await startProcessStack({
      ingresses: 1,
      workers: 1,
      media: { bytes: 1024, durationMs: () => 0 },
      notifyDelayMs: () => 0,
      env: { RETENTION_INTERVAL_S: '2' },
    });
    store = openMediaStore({ dir: path.join(stack.dir, 'media'), store: undefined });
    client = await connectClient({ address: stack.temporalAddress }, 'default');
  }, 300_000);

  afterAll(async () => {
    store?.close();
    await client?.connection.close();
    await stack?.teardown();
  }, 120_000);

  it('resumes after the kill, removes every expired row and unshared file once, and keeps the file a kept album uses', async () => {
    const workspace = unique('ws-expired');
    const keptWorkspace = unique('ws-kept');
    const startedAt = Date.now();
    const filled = await fillExpiredAlbums(stack.pool, store, { workspace, albums, files });
    // A message of a workspace that keeps everything uses the first file.
    await stack.pool.query(`INSERT INTO workspace_retention (workspace, days) VALUES ($1, NULL)`, [keptWorkspace]);
    const { rows } = await stack.pool.query<{ id: string }>(
      `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, raw, last_received_at)
       VALUES ($1, 'whatsapp', 'acc', 'conv', 'kept', '{}', '2020-01-01') RETURNING id`,
      [keptWorkspace],
    );
    await stack.pool.query(`INSERT INTO attachments (message_pk, position, status, bytes, sha256) VALUES ($1, 0, 'downloaded', 1024, $2)`, [
      rows[0]!.id,
      filled.shas[0],
    ]);

    const remaining = async () =>
      Number((await stack.pool.query<{ n: string }>(`SELECT count(*) AS n FROM albums WHERE workspace = $1`, [workspace])).rows[0]!.n);
    const midPurge = await waitFor(
      async () => {
        const left = await remaining();
        return { done: left > 0 && left < albums, detail: `${left} albums left` };
      },
      120_000,
      20,
    );
    expect(midPurge.done, midPurge.detail).toBe(true);
    const worker = stack.workers[0]!;
    await worker.kill9();
    const leftAtKill = await remaining();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await worker.start();

    const purged = await waitFor(
      async () => {
        const left = await workspaceLeftovers(stack.pool, workspace);
        const garbage = (await stack.pool.query(`SELECT 1 FROM media_garbage`)).rowCount;
        return { done: Object.keys(left).length === 0 && garbage === 0, detail: `${JSON.stringify(left)}, ${garbage} objects queued` };
      },
      300_000,
      500,
    );
    expect(purged.done, purged.detail).toBe(true);
    for (const sha of filled.shas.slice(1)) expect(await store.stat(sha), sha).toBeNull();
    expect(await store.stat(filled.shas[0]!)).not.toBeNull();
    expect(await workspaceLeftovers(stack.pool, keptWorkspace)).toEqual({ messages: 1, attachments: 1 });

    // Every file removed is counted once across the Schedule's runs: none was freed twice. (The batch the
    // killed worker committed but could not report is in no run's counts: at most one batch of albums.)
    let sum = { mediaObjects: 0, albums: 0, messages: 0 };
    await waitFor(
      async () => {
        sum = { mediaObjects: 0, albums: 0, messages: 0 };
        for await (const run of client.workflow.list({ query: 'WorkflowType = "retentionWorkflow" AND ExecutionStatus = "Completed"' })) {
          const counts: PurgeCounts = await client.workflow.getHandle<typeof retentionWorkflow>(run.workflowId, run.runId).result();
          const { mediaObjects, albums: purgedAlbums, messages } = counts;
          sum.mediaObjects += mediaObjects;
          sum.albums += purgedAlbums;
          sum.messages += messages;
        }
        return { done: sum.mediaObjects === files - 1, detail: JSON.stringify(sum) };
      },
      60_000,
      1_000,
    );
    expect(sum.mediaObjects).toBe(files - 1);
    expect(sum.albums).toBeGreaterThanOrEqual(albums - purgeBatch);
    expect(sum.albums).toBeLessThanOrEqual(albums);
    expect(sum.messages).toBe(sum.albums * 2);
    console.log(
      [
        '',
        'albumflow retention under a worker kill',
        formatTable(
          ['expired albums', 'files', 'albums left at the kill', 'purged in', 'albums counted', 'files removed', 'kept (shared)'],
          [
            [
              String(albums),
              String(files),
              String(leftAtKill),
              seconds(Date.now() - startedAt),
              String(sum.albums),
              String(sum.mediaObjects),
              '1',
            ],
          ],
        ),
        '',
      ].join('\n'),
    );
  });
});
