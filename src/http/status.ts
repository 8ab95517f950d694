import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { LRUCache } from 'lru-cache';
import { Type } from 'typebox';
import { statusQuery } from '../../workflows/definitions.js';
import { albumWorkflowId, messageWorkflowId } from '../domain/keys.js';
import type { AlbumKey, AlbumView } from '../domain/types.js';
import { decisionsOf } from '../db/decisions.js';
import { albumChildren, albumStatusFromDatabase, findAlbum, findMessage, listAlbums } from '../db/status.js';
import type { Pool } from '../db/pool.js';
import { albumStatusViewsTotal } from '../common/metrics.js';
import { completedAlbumView, reviewView, unseenChildren } from '../domain/album-view.js';
import { albumProfileOf } from '../platforms/index.js';
import { HttpError } from '../common/http-error.js';
import { AlbumParams, albumKeyOf, albumPath, MessageParams, messageKeyOf, messagePath, rowIdPattern, Segment } from './params.js';
import { AlbumListSchema, MessageStatusSchema, type AlbumListBody, type MessageStatus } from './schemas.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import { AlbumViewSchema } from '../domain/schemas.js';

export interface StatusOptions {
  pool: Pool;
  temporal: Client;
}

/** Where an album body came from, in the `x-albumflow-source` response header. */
export type StatusSource = 'workflow' | 'database';

/** Running workflows whose last status answer the process keeps. */
const answersKept = 1000;

interface WorkflowAnswer {
  runId: string;
  /** The run's history length when it answered: its state changes only with new events. */
  historyLength: number;
  body: AlbumView;
}

function encodeCursor(id: string): string {
  return Buffer.from(`album:${id}`).toString('base64url');
}

const cursorPattern = new RegExp(`^album:(${rowIdPattern.slice(1, -1)})$`);

function decodeCursor(cursor: string): string {
  const match = cursorPattern.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new HttpError(400, 'invalid_cursor', 'cursor is not one this API returned');
  return match[1]!;
}

/**
 * Album, message and album-list status. While an album's workflow runs, its body is the workflow's
 * `status` query, completed with the stored children it has not seen yet (every child is stored before
 * its webhook is answered, the workflow sees it later); otherwise it is built from PostgreSQL with the
 * same view builder. A query is a billable Temporal action and a describe is not: a view of a running
 * workflow whose history has not grown since its last answer gets that answer again (completed with
 * what PostgreSQL holds at each read), so a page that refreshes itself costs a query only when the album
 * changed.
 */
export const statusRoutes: FastifyPluginAsyncTypebox<StatusOptions> = async (app, { pool, temporal }) => {
  const answers = new LRUCache<string, WorkflowAnswer>({ max: answersKept });

  async function queryRunningWorkflow(workflowId: string): Promise<AlbumView | null> {
    try {
      return await temporal.connection.withDeadline(Date.now() + 5_000, async () => {
        const handle = temporal.workflow.getHandle(workflowId);
        const { status, runId, historyLength } = await handle.describe();
        if (status.name !== 'RUNNING') return null;
        const kept = answers.get(workflowId);
        if (kept && kept.runId === runId && kept.historyLength === historyLength) {
          albumStatusViewsTotal.inc({ source: 'cached' });
          return kept.body;
        }
        const body = await handle.query(statusQuery);
        answers.set(workflowId, { runId, historyLength, body });
        albumStatusViewsTotal.inc({ source: 'workflow' });
        return body;
      });
    } catch (err) {
      app.log.warn({ err, workflowId }, 'album status query failed; answering from PostgreSQL');
      return null;
    }
  }

  app.get(
    albumPath,
    {
      schema: {
        summary: 'Status of one album',
        tags: ['status'],
        params: AlbumParams,
        querystring: Type.Object({
          source: Type.Enum(['auto', 'database'], {
            default: 'auto',
            description: 'auto: the running workflow, else PostgreSQL; database: always what PostgreSQL recorded',
          }),
        }),
        response: { 200: AlbumViewSchema, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const key = albumKeyOf(request.params);
      const album = await findAlbum(pool, key);
      if (!album) throw new HttpError(404, 'album_not_found', `no child of album ${albumWorkflowId(key)} was ever stored`);
      if (request.query.source === 'database') {
        void reply.header('x-albumflow-source', 'database' satisfies StatusSource);
        albumStatusViewsTotal.inc({ source: 'database' });
        return albumStatusFromDatabase(pool, album, key, { childOrder: albumProfileOf(album.source).childOrder });
      }
      const [live, stored] = await Promise.all([queryRunningWorkflow(album.workflowId), albumChildren(pool, album.id)]);
      void reply.header('x-albumflow-source', (live ? 'workflow' : 'database') satisfies StatusSource);
      if (!live) {
        albumStatusViewsTotal.inc({ source: 'database' });
        return albumStatusFromDatabase(pool, album, key, { childOrder: albumProfileOf(album.source).childOrder, children: stored });
      }
      if (unseenChildren(live, stored).length === 0) return live;
      const decisions = await decisionsOf(pool, album.workflowId);
      const parts = { children: stored, decisions, reviewReasons: album.reviewReasons, reviewResolved: album.reviewResolved };
      return completedAlbumView(live, parts, albumProfileOf(album.source).childOrder);
    },
  );

  app.get(
    messagePath,
    {
      schema: {
        summary: 'Status of one child message',
        tags: ['status'],
        params: MessageParams,
        response: { 200: MessageStatusSchema, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (request): Promise<MessageStatus> => {
      const key = messageKeyOf(request.params);
      const message = await findMessage(pool, key);
      if (!message) throw new HttpError(404, 'message_not_found', `message ${messageWorkflowId(key)} was never stored`);
      const { messageId, ...scope } = key;
      const albumKey: AlbumKey | null = message.albumId === null ? null : { ...scope, albumId: message.albumId };
      const workflowId = albumKey ? albumWorkflowId(albumKey) : messageWorkflowId(key);
      const decisions = await decisionsOf(pool, workflowId, albumKey ? messageId : undefined);
      return {
        workflowId,
        key,
        albumKey,
        index: message.albumMeta?.index ?? message.index,
        total: message.albumMeta?.total ?? message.total,
        caption: message.caption,
        sentAt: message.sentAt,
        receivedAt: message.receivedAt,
        lastReceivedAt: message.lastReceivedAt,
        deliveryCount: message.deliveryCount,
        attachments: message.attachments,
        history: message.history,
        decisions,
      };
    },
  );

  app.get(
    '/workspaces/:workspace/albums',
    {
      schema: {
        summary: 'Albums of a workspace, newest first',
        tags: ['status'],
        params: Type.Object({ workspace: Segment }),
        querystring: Type.Object({
          review: Type.Optional(Type.Boolean({ description: 'only albums that need review (true) or not (false)' })),
          state: Type.Optional(Type.Enum(['collecting', 'processed', 'closed'])),
          provider: Type.Optional(Segment),
          conversation: Type.Optional(Segment),
          limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
          cursor: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: AlbumListSchema, 400: ErrorBody },
      },
    },
    async (request): Promise<AlbumListBody> => {
      const q = request.query;
      const rows = await listAlbums(pool, {
        workspaces: [request.params.workspace],
        ...(q.state !== undefined ? { state: q.state } : {}),
        ...(q.review !== undefined ? { review: q.review } : {}),
        ...(q.provider !== undefined ? { provider: q.provider } : {}),
        ...(q.conversation !== undefined ? { conversationId: q.conversation } : {}),
        ...(q.cursor !== undefined ? { afterId: decodeCursor(q.cursor) } : {}),
        limit: q.limit + 1,
      });
      const page = rows.slice(0, q.limit);
      return {
        items: page.map((row) => ({
          workflowId: row.workflowId,
          key: row.key,
          state: row.state,
          review: reviewView(row.reviewReasons, [], row.reviewResolved),
          distinctChildren: row.distinctChildren,
          firstReceivedAt: row.firstReceivedAt,
          lastReceivedAt: row.lastReceivedAt,
        })),
        nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!.id) : null,
      };
    },
  );
};
