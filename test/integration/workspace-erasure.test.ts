// Offboarding a customer: DELETE /admin/workspaces/:ws/data erases everything of a workspace (every row
// that carries its name but the erasure receipts and the admin audit, its media, its workflows) and
// removes the workspace, so that its name can be added again; another workspace keeps everything.
import crypto from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSecretKey } from '../../src/common/secret-key.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { createDeliveryEngine, endpointGuard, type DeliveryEngine } from '../../src/delivery/engine.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { generateSecret } from '../../src/delivery/wire.js';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { MessageKey } from '../../src/domain/types.js';
import { mediaLinksFor } from '../../src/media/links.js';
import { openMediaStore, type MediaStore } from '../../src/media/store.js';
import { eventually, settled, testAlbum, workspaceInbox } from '../harness/albums.js';
import { testLogger } from '../harness/env.js';
import { albumEvent } from '../harness/events.js';
import { jpeg } from '../harness/images.js';
import { unique } from '../harness/random.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/servers/webhook-receiver.js';
import { startStack, type Stack } from '../harness/stack.js';

const sha256 = (body: Buffer) => crypto.createHash('sha256').update(body).digest('hex');
const adminToken = unique('wserase-admin');
const admin = { authorization: `Bearer ${adminToken}` };
const environmentSecret = generateSecret();
const acme = 'acme';
const acmeSecret = 'acme-signing-secret';

let stack: Stack;
let media: MediaServer;
let store: MediaStore;
let receiver: WebhookReceiver;
let engine: DeliveryEngine;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  media = await startMediaServer();
  stack = await startStack({
    API_TOKENS: JSON.stringify({ [adminToken]: ['*'] }),
    NOTIFY_URL: receiver.endpoint('environment', [environmentSecret]),
    NOTIFY_SECRET: environmentSecret,
    NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true',
    QUIET_PERIOD_MS: '200',
    LATE_WINDOW_MS: '300',
  });
  store = openMediaStore(stack.config.media);
  // The worker's sender, as src/process/start.ts starts it beside the worker: deliveries get attempts.
  const delivery = deliveryConfig(stack.config.notify);
  engine = createDeliveryEngine({
    pool: stack.pool,
    keys: resolveSecretKey({ secretKey: stack.config.secretKey, dataDir: stack.config.dataDir }).ring,
    config: delivery,
    guard: endpointGuard(delivery),
    materialize: withMediaLinks(mediaLinksFor(stack.config, stack.pool)),
    logger: testLogger(stack.config),
    sweepIntervalMs: 100,
  });
  await engine.start();
});

afterAll(async () => {
  await engine?.stop();
  store?.close();
  await stack?.close();
  await media?.close();
  await receiver?.close();
});

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, headers = admin) {
  return stack.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
}

/** Every table with a `workspace` column but the receipts (erasures), with how many rows of `workspace` it holds, where any. */
async function rowsOf(workspace: string): Promise<Record<string, number>> {
  const { rows: tables } = await stack.pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = 'workspace' AND table_name <> 'erasures' ORDER BY table_name`,
  );
  expect(tables.map((row) => row.table_name)).toEqual(
    expect.arrayContaining(['albums', 'deliveries', 'endpoints', 'feed', 'telegram_bots']),
  );
  const counts: Record<string, number> = {};
  for (const { table_name: table } of tables) {
    const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE workspace = $1`, [workspace]);
    if (rows[0]!.n > 0) counts[table] = rows[0]!.n;
  }
  const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM workspaces WHERE name = $1`, [workspace]);
  if (rows[0]!.n > 0) counts.workspaces = rows[0]!.n;
  return counts;
}

async function gone(workflowId: string): Promise<void> {
  await eventually(async () => {
    const described = await stack.client.workflow
      .getHandle(workflowId)
      .describe()
      .catch((err: unknown) => err);
    expect(described).toBeInstanceOf(WorkflowNotFoundError);
  });
}

describe("a workspace's erasure", () => {
  it('removes every row, file and workflow of the workspace and the workspace itself; the name can then be added again', async () => {
    // The customer: a workspace of the admin API with a secret, a Telegram bot, a token, a retention and an endpoint.
    expect((await call('POST', '/admin/workspaces', { name: acme })).statusCode).toBe(201);
    expect((await call('POST', `/admin/workspaces/${acme}/secrets`, { secret: acmeSecret })).statusCode).toBe(201);
    const bot = await call('POST', `/admin/workspaces/${acme}/telegram-bots`, {
      name: 'shop',
      token: `7000000123:${crypto.randomBytes(20).toString('base64url')}`,
      secretToken: unique('telegram-secret-token'),
    });
    expect(bot.statusCode, bot.body).toBe(201);
    const token = await call('POST', '/admin/tokens', { name: 'acme-reader', workspaces: [acme] });
    expect(token.statusCode, token.body).toBe(201);
    const acmeAuth = { authorization: `Bearer ${token.json<{ token: string }>().token}` };
    expect((await call('PUT', `/admin/workspaces/${acme}/retention`, { days: 30 })).statusCode).toBe(204);
    const endpoint = await call('POST', `/workspaces/${acme}/endpoints`, { url: receiver.endpoint('acme', []) }, acmeAuth);
    expect(endpoint.statusCode, endpoint.body).toBe(201);
    receiver.setSecrets('acme', [endpoint.json<{ secret: string }>().secret]);

    // Its data: an album with a downloaded file, a standalone message with another, a quarantined body,
    // an event of another type and a tombstone of an earlier erasure.
    const files = { album: await jpeg(64, 48, 30), standalone: await jpeg(64, 48, 200), kept: await jpeg(64, 48, 120) };
    const photo = (body: Buffer) => [{ type: 'image', url: media.file(body, 'image/jpeg'), mime_type: 'image/jpeg' }];
    const inbox = workspaceInbox(stack, acme, acmeSecret);
    const album = testAlbum(inbox, unique('alb'));
    await album.send({ messageId: 'm0', index: 0, total: 1, attachments: photo(files.album) });
    const standalone: MessageKey = {
      workspace: acme,
      provider: 'whatsapp',
      accountId: 'acc_1',
      conversationId: unique('c'),
      messageId: 'solo',
    };
    const posted = await inbox.post(
      albumEvent({ conversationId: standalone.conversationId, messageId: 'solo', attachments: photo(files.standalone) }),
    );
    expect(posted.statusCode).toBe(202);
    await album.until((status) => {
      settled(status);
      expect(status.state).toBe('closed');
      expect(status.media.downloaded).toBe(1);
    });
    await stack.pool.query(`INSERT INTO quarantine (workspace, reason, detail, raw) VALUES ($1, 'test', '', '\\x00')`, [acme]);
    await stack.pool.query(
      `INSERT INTO events (workspace, source, event_id, type, raw, first_received_at, last_received_at)
       VALUES ($1, 'unifyport', $2, 'conversation.updated', '{}', now(), now())`,
      [acme, unique('event')],
    );
    await stack.pool.query(`INSERT INTO tombstones (identity, workspace, expires_at) VALUES ($1, $2, now() + interval '1 day')`, [
      crypto.randomBytes(32),
      acme,
    ]);
    // Another workspace's album shares nothing and keeps everything.
    const kept = testAlbum(workspaceInbox(stack, stack.workspace, stack.secret), unique('alb-kept'));
    await kept.send({ messageId: 'm0', index: 0, total: 1, attachments: photo(files.kept) });
    await kept.until((status) => expect(status.media.downloaded).toBe(1));
    // Delivered to the workspace's endpoint and to the environment's, with attempts, and in the feed.
    await eventually(async () => {
      const { rows } = await stack.pool.query<{ deliveries: number; attempts: number; feed: number; standalone: number }>(
        `SELECT (SELECT count(*)::int FROM deliveries WHERE workspace = $1 AND state = 'delivered') AS deliveries,
                (SELECT count(*)::int FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.workspace = $1) AS attempts,
                (SELECT count(*)::int FROM feed WHERE workspace = $1) AS feed,
                (SELECT count(*)::int FROM attachments t JOIN messages m ON m.id = t.message_pk
                  WHERE m.workspace = $1 AND m.message_id = 'solo' AND t.status = 'downloaded') AS standalone`,
        [acme],
      );
      expect(rows[0]!.deliveries).toBeGreaterThanOrEqual(2);
      expect(rows[0]!.attempts).toBeGreaterThanOrEqual(2);
      expect(rows[0]!.feed).toBeGreaterThanOrEqual(1);
      expect(rows[0]!.standalone).toBe(1);
    }, 60_000);
    expect(Object.keys(await rowsOf(acme)).sort()).toEqual(
      expect.arrayContaining(['albums', 'deliveries', 'endpoints', 'events', 'feed', 'feed_positions', 'messages', 'notifications']),
    );
    expect(await rowsOf(acme)).toMatchObject({
      quarantine: 1,
      telegram_bots: 1,
      tombstones: 1,
      workspace_retention: 1,
      workspace_secrets: 1,
    });
    expect(await store.stat(sha256(files.album))).not.toBeNull();

    // Only a "*" token erases a workspace.
    expect((await call('DELETE', `/admin/workspaces/${acme}/data`, undefined, acmeAuth)).statusCode).toBe(403);
    const erase = await call('DELETE', `/admin/workspaces/${acme}/data`);
    expect(erase.statusCode, erase.body).toBe(202);
    const { id, state } = erase.json<{ id: string; state: string }>();
    expect(state).toBe('running');
    // The workspace is removed at once: its webhooks answer 404.
    expect((await inbox.post(albumEvent({ conversationId: unique('c'), messageId: 'late' }))).statusCode).toBe(404);

    const progress = await eventually(async () => {
      const response = await call('GET', `/workspaces/${acme}/erasures/${id}`);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json<{ state: string; scope: string; counts: Record<string, number> }>();
      expect(body.state).toBe('done');
      return body;
    }, 90_000);
    expect(progress.scope).toBe('workspace');
    expect(progress.counts).toMatchObject({
      albums: 1,
      messages: 2,
      attachments: 2,
      tombstones: 0,
      workflows: 2,
      endpoints: 1,
      quarantine: 1,
      mediaObjects: 2,
    });

    expect(await rowsOf(acme)).toEqual({});
    expect(await store.stat(sha256(files.album))).toBeNull();
    expect(await store.stat(sha256(files.standalone))).toBeNull();
    await gone(albumWorkflowId(album.key));
    await gone(messageWorkflowId(standalone));
    // The receipt and the audit stay: who removed the workspace and asked for the erasure.
    const audit = await stack.pool.query<{ action: string; subject: string }>(
      `SELECT action, subject FROM admin_audit WHERE action IN ('workspace.remove', 'workspace.erase') ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { action: 'workspace.remove', subject: `workspace ${acme}` },
      { action: 'workspace.erase', subject: `data of workspace ${acme}: erasure ${id}` },
    ]);

    // Nothing of the other workspace went: its album, its file, the environment endpoint.
    expect((await kept.status())?.children).toHaveLength(1);
    expect(await store.stat(sha256(files.kept))).not.toBeNull();
    expect((await stack.pool.query(`SELECT 1 FROM endpoints WHERE id = 'ep_environment'`)).rowCount).toBe(1);

    // The name is free: a new customer gets it.
    const again = await call('POST', '/admin/workspaces', { name: acme });
    expect(again.statusCode, again.body).toBe(201);
    // Erasing a workspace that is gone already (or never was) is no error: there is nothing left to remove.
    expect((await call('DELETE', '/admin/workspaces/no-such-customer/data')).statusCode).toBe(202);
  });

  it('is refused for a workspace declared in the environment, which erases nothing', async () => {
    const refused = await call('DELETE', `/admin/workspaces/${stack.workspace}/data`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json<{ error: { code: string } }>().error.code).toBe('read_only');
    const { rows } = await stack.pool.query(`SELECT 1 FROM erasures WHERE workspace = $1`, [stack.workspace]);
    expect(rows).toEqual([]);
  });
});
