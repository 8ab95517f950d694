import fs from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle, WorkflowHandleWithSignaledRunId } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import type { Config } from '../../src/common/config.js';
import { loadChildren } from '../../src/db/children.js';
import type { Pool } from '../../src/db/pool.js';
import { albumStatusFromDatabase, findAlbum } from '../../src/db/status.js';
import { startSearchAttributes } from '../../src/temporal/workflow-start.js';
import { childrenSignal, workflowTypes } from '../../workflows/definitions.js';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey, AlbumView, ChildArrival, JsonValue, MessageKey } from '../../src/domain/types.js';
import type { AlbumWorkflowInput } from '../../workflows/types.js';
import { albumProfileOf } from '../../src/platforms/index.js';
import { startTestWorker, testClient, testPool, type TestWorker } from './env.js';
import { albumEvent, webhookRequest, type AlbumEventOptions } from './events.js';
import { startMediaServer, type MediaServer } from './servers/media.js';
import { unique } from './random.js';
import type { Stack } from './stack.js';

export interface TestChild {
  messageId: string;
  index?: number | null;
  total?: number | null;
  /** The album object as received; defaults to `{ id, index, total }` of the usable values. */
  albumMeta?: Record<string, JsonValue>;
  metadataInvalid?: boolean;
  caption?: string;
  sentAt?: string;
  /** One attachment per entry; null stores an attachment without URL (`unavailable`). */
  urls?: (string | null)[];
}

/** A fresh album key in a conversation of its own. */
export function newAlbumKey(workspace: string, albumId = 'alb_1', conversationId = unique('conv')): AlbumKey {
  return { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, albumId };
}

async function insertMessage(pool: Pool, key: MessageKey, albumPk: string | null, child: TestChild): Promise<string> {
  const albumMeta = albumPk === null ? null : (child.albumMeta ?? { index: child.index ?? null, total: child.total ?? null });
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, album_meta,
                           album_index, album_total, metadata_invalid, caption, sent_at, raw)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, '{}')
     ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE SET last_received_at = now()
     RETURNING id`,
    [
      key.workspace,
      key.provider,
      key.accountId,
      key.conversationId,
      key.messageId,
      albumPk,
      albumMeta === null ? null : JSON.stringify(albumMeta),
      child.index ?? null,
      child.total ?? null,
      child.metadataInvalid ?? false,
      child.caption ?? null,
      child.sentAt ?? null,
    ],
  );
  const messagePk = rows[0]!.id;
  for (const [position, url] of (child.urls ?? []).entries()) {
    await pool.query(
      `INSERT INTO attachments (message_pk, position, kind, url, mime_type, status)
       VALUES ($1, $2, 'image', $3, 'image/jpeg', $4)
       ON CONFLICT DO NOTHING`,
      [messagePk, position, url, url === null ? 'unavailable' : 'pending'],
    );
  }
  return messagePk;
}

async function arrivalsOf(pool: Pool, messagePks: string[]): Promise<ChildArrival[]> {
  const client = await pool.connect();
  try {
    const stored = await loadChildren(client, messagePks);
    return messagePks.map((pk) => stored.find((child) => child.messagePk === pk)!.arrival);
  } finally {
    client.release();
  }
}

/** Stores children of an album the way the ingress does and returns them as the dispatcher signals them. */
export async function storeAlbumChildren(pool: Pool, key: AlbumKey, children: TestChild[]): Promise<ChildArrival[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workflow_id) DO UPDATE SET last_received_at = now()
     RETURNING id`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId, albumWorkflowId(key)],
  );
  const albumPk = rows[0]!.id;
  const pks: string[] = [];
  for (const child of children) pks.push(await insertMessage(pool, { ...key, messageId: child.messageId }, albumPk, child));
  return arrivalsOf(pool, pks);
}

/**
 * Stores a message with nothing but one attachment (position 0), as a download activity finds it: `url`,
 * and the `kind` and `file_name` given; answers the message's pk.
 */
export async function storeAttachment(
  pool: Pool,
  key: MessageKey,
  attachment: { url: string | null; kind?: string; fileName?: string },
): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, raw)
     VALUES ($1, $2, $3, $4, $5, '{}') RETURNING id`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId],
  );
  const messagePk = rows[0]!.id;
  await pool.query(`INSERT INTO attachments (message_pk, position, kind, url, file_name) VALUES ($1, 0, $2, $3, $4)`, [
    messagePk,
    attachment.kind ?? null,
    attachment.url,
    attachment.fileName ?? null,
  ]);
  return messagePk;
}

export async function storeStandaloneMessage(pool: Pool, key: MessageKey, child: Omit<TestChild, 'messageId'>): Promise<ChildArrival> {
  const pk = await insertMessage(pool, key, null, { ...child, messageId: key.messageId });
  return (await arrivalsOf(pool, [pk]))[0]!;
}

/** What the dispatcher sends for an album: signal-with-start carrying the pending children. */
export async function signalAlbum(
  client: Client,
  config: Config,
  key: AlbumKey,
  children: ChildArrival[],
  options: Partial<Pick<AlbumWorkflowInput, 'continueAsNewAfterSignals' | 'profile'>> = {},
): Promise<WorkflowHandleWithSignaledRunId> {
  const input: AlbumWorkflowInput = { key, timings: config.album, profile: albumProfileOf('unifyport'), ...options };
  return client.workflow.signalWithStart(workflowTypes.album, {
    workflowId: albumWorkflowId(key),
    taskQueue: config.temporal.taskQueue,
    args: [input],
    signal: childrenSignal,
    signalArgs: [{ children }],
    typedSearchAttributes: startSearchAttributes(key),
  });
}

export async function signalMessage(
  client: Client,
  config: Config,
  key: MessageKey,
  child: ChildArrival,
): Promise<WorkflowHandleWithSignaledRunId> {
  return client.workflow.signalWithStart(workflowTypes.message, {
    workflowId: messageWorkflowId(key),
    taskQueue: config.temporal.taskQueue,
    args: [{ key, timings: config.album }],
    signal: childrenSignal,
    signalArgs: [{ children: [child] }],
    typedSearchAttributes: startSearchAttributes(key),
  });
}

/** Retries `check` until it passes; asynchronous outcomes on a busy machine take their time. */
export function eventually<T>(check: () => Promise<T> | T, timeout = 45_000): Promise<T> {
  return vi.waitFor(check, { timeout, interval: 100 });
}

export const historiesDir = path.resolve(import.meta.dirname, '../fixtures/histories');

/**
 * With UPDATE_HISTORIES=1, saves the run's history as a replay fixture (test/fixtures/histories/<name>.json)
 * in Temporal's JSON history format, the one `temporal workflow show --output json` and the UI export.
 */
export async function saveHistory(name: string, handle: WorkflowHandle): Promise<void> {
  if (process.env.UPDATE_HISTORIES !== '1') return;
  const history: unknown = JSON.parse(historyToJSON(await handle.fetchHistory()));
  fs.mkdirSync(historiesDir, { recursive: true });
  fs.writeFileSync(path.join(historiesDir, `${name}.json`), JSON.stringify({ workflowId: handle.workflowId, history }, null, 1) + '\n');
}

export interface SavedHistory {
  name: string;
  workflowId: string;
  history: temporal.api.history.v1.IHistory;
}

/**
 * Every saved history: the current ones, and under a subdirectory each the ones saved before a patched
 * change (named `<subdirectory>/<name>`), which the workflow code must go on replaying.
 */
export function loadHistories(): SavedHistory[] {
  if (!fs.existsSync(historiesDir)) return [];
  return fs
    .readdirSync(historiesDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const saved = JSON.parse(fs.readFileSync(path.join(historiesDir, file), 'utf8')) as { workflowId: string; history: unknown };
      return {
        name: file.slice(0, -'.json'.length).split(path.sep).join('/'),
        workflowId: saved.workflowId,
        history: historyFromJSON(saved.history),
      };
    });
}

/** What the workflow tests of one file run against; filled in before its tests. */
export interface WorkflowTestBed {
  pool: Pool;
  client: Client;
  worker: TestWorker;
  media: MediaServer;
}

/** A pool, a client, a worker and a media server for the tests of one file, stopped after them. */
export function workflowTestBed(config: Config): WorkflowTestBed {
  const bed = {} as WorkflowTestBed;
  beforeAll(async () => {
    bed.pool = testPool(config);
    bed.client = await testClient(config);
    bed.worker = await startTestWorker(config, bed.pool);
    bed.media = await startMediaServer();
  });
  afterAll(async () => {
    await bed.worker?.stop();
    await bed.media?.close();
    await bed.client?.connection.close();
    await bed.pool?.end();
  });
  return bed;
}

// Albums sent through a stack's webhook, and their status read back from PostgreSQL.

export type WebhookChild = Omit<AlbumEventOptions, 'albumId' | 'conversationId' | 'accountId' | 'provider'>;

/** Where albums of one workspace are sent: a stack's own workspace, or another one its app accepts. */
export interface Inbox {
  workspace: string;
  pool: Pool;
  post(event: unknown): Promise<{ statusCode: number }>;
}

/**
 * A workspace of the stack's `WORKSPACE_SECRETS` other than its own (stacks sign for one workspace),
 * so that one database holds albums of several workspaces.
 */
export function workspaceInbox(stack: Pick<Stack, 'app' | 'pool'>, workspace: string, secret: string): Inbox {
  return {
    workspace,
    pool: stack.pool,
    async post(event) {
      const delivery = { route: 'unifyport', workspace, secret, body: JSON.stringify(event) } as const;
      const { path, headers } = webhookRequest(delivery);
      return stack.app.inject({ method: 'POST', url: path, headers, payload: delivery.body });
    },
  };
}

export interface TestAlbum {
  key: AlbumKey;
  /** Posts a child of this album (signed, through the webhook) and checks it was accepted. */
  send(child: WebhookChild): Promise<void>;
  status(): Promise<AlbumView | null>;
  /** The status once `check` passes on it. */
  until(check: (status: AlbumView) => void, timeoutMs?: number): Promise<AlbumView>;
}

export function testAlbum(inbox: Inbox, albumId: string, conversationId = `conv-${albumId}`): TestAlbum {
  const key: AlbumKey = { workspace: inbox.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, albumId };
  const status = async () => {
    const album = await findAlbum(inbox.pool, key);
    return album ? albumStatusFromDatabase(inbox.pool, album, key, { childOrder: albumProfileOf(album.source).childOrder }) : null;
  };
  return {
    key,
    async send(child) {
      const response = await inbox.post(albumEvent({ ...child, albumId, conversationId }));
      expect(response.statusCode).toBe(202);
    },
    status,
    until: (check, timeoutMs = 60_000) =>
      eventually(async () => {
        const current = await status();
        expect(current).not.toBeNull();
        check(current!);
        return current!;
      }, timeoutMs),
  };
}

/** Every attachment of the album reached an outcome (none is pending). */
export function settled(status: AlbumView): void {
  expect(status.media.pending).toBe(0);
}
