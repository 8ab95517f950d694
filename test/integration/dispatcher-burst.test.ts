import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { createDispatcher, type Dispatcher } from '../../src/dispatcher/dispatcher.js';
import { buildApp, type App } from '../../src/http/app.js';
import type { ChildrenBatch } from '../../workflows/types.js';
import { eventually } from '../helpers/albums.js';
import { testClient, testConfig, testLogger, testPool, unique } from '../helpers/env.js';

const workspace = unique('burst');
const config = testConfig({ WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [] }), QUIET_PERIOD_MS: '2000' });

describe('a burst of children into one album', () => {
  let pool: Pool;
  let client: Client;
  let app: App;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    pool = testPool(config);
    client = await testClient(config);
    dispatcher = createDispatcher({
      pool,
      client,
      taskQueue: config.temporal.taskQueue,
      timings: config.album,
      logger: testLogger(config),
      workspacePrefix: workspace,
    });
    app = await buildApp({ config, pool, temporal: client, wakeDispatcher: () => dispatcher.wake(), logger: testLogger(config) });
    dispatcher.start();
  });

  afterAll(async () => {
    await dispatcher.stop();
    await app.close();
    await client.connection.close();
    await pool.end();
  });

  it('reaches its workflow in a few coalesced signals, not one per commit, and loses no child', async () => {
    const children = 120;
    for (let i = 0; i < children; i++) {
      const response = await app.inject({
        method: 'POST',
        url: `/webhooks/unifyport/${workspace}`,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          id: unique('evt'),
          type: 'message.received',
          provider: 'telegram',
          account_id: 'acc',
          data: { conversation: { id: 'conv' }, message: { id: `m${i}`, album: { id: 'big' } } },
        }),
      });
      expect(response.statusCode).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const handle = client.workflow.getHandle(`album:${workspace}:telegram:acc:conv:big`);
    const signals = await eventually(async () => {
      const history = await handle.fetchHistory();
      const batches = (history.events ?? []).flatMap((event) => {
        const attributes = event.workflowExecutionSignaledEventAttributes;
        return attributes?.signalName === 'children' ? [defaultPayloadConverter.fromPayload<ChildrenBatch>(attributes.input!.payloads![0]!)] : [];
      });
      const ids = new Set(batches.flatMap((batch) => batch.children.map((child) => child.messageId)));
      expect(ids.size).toBe(children);
      return batches;
    });
    await eventually(async () => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox o JOIN messages m ON m.id = o.message_pk WHERE m.workspace = $1`,
        [workspace],
      );
      expect(rows[0]!.n).toBe(0);
    });
    // The commits span at least 1.2 s; one signal per 500 ms (a quarter of the 2 s quiet period), plus the first.
    expect(signals.length).toBeLessThan(children / 4);
    await handle.terminate('test done').catch(() => undefined);
  });
});
