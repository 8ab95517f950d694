import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import { Type, type Static } from 'typebox';
import type { Config } from '../common/config.js';
import type { ErasureSubject } from '../domain/lifetime.js';
import { findErasure, type ErasureReceipt } from '../db/erasures.js';
import type { Pool } from '../db/pool.js';
import { auditedChange } from '../db/tenants.js';
import { findAlbum, findMessage } from '../db/status.js';
import { startErasure } from '../temporal/lifetime.js';
import { HttpError } from '../common/http-error.js';
import { AlbumParams, MessageParams, Segment, albumKeyOf, albumPath, messageKeyOf, messagePath } from './params.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import type { TenantRegistry } from '../tenants/registry.js';
import { TenantName } from '../tenants/schemas.js';
import { TenantError, TenantService } from '../tenants/service.js';
import { callerOf } from './admin.js';

export interface ErasureOptions {
  config: Config;
  pool: Pool;
  temporal: Client;
  /** The tenants a workspace's erasure removes the workspace from. */
  tenants: TenantRegistry;
}

const ConversationParams = Type.Object({ workspace: Segment, provider: Segment, account: Segment, conversation: Segment });
const conversationPath = '/workspaces/:workspace/conversations/:provider/:account/:conversation';
const ErasureParams = Type.Object({
  workspace: Segment,
  id: Type.String({ maxLength: 64, description: 'The erasure id a DELETE answered' }),
});

const countsDescription =
  'What was removed so far: albums, messages, attachments, events, decisions, notifications, quarantine, tombstones, ' +
  "workflows (deleted from Temporal), endpoints (a workspace's), mediaObjects and mediaBytes (files no kept album still uses), mediaFailed (files the " +
  'store refused to delete or did not answer for: set aside, removed by a later retention run)';

const Started = Type.Object(
  { id: Type.String({ description: 'The erasure id: GET /workspaces/:workspace/erasures/:id' }), state: Type.Literal('running') },
  { description: 'The erasure is recorded and running' },
);

const Progress = Type.Object({
  id: Type.String(),
  state: Type.Union([Type.Literal('running'), Type.Literal('done')]),
  counts: Type.Record(Type.String(), Type.Integer(), { description: countsDescription }),
  scope: Type.Union([Type.Literal('album'), Type.Literal('message'), Type.Literal('conversation'), Type.Literal('workspace')]),
  requestedAt: Type.String({ format: 'date-time' }),
  requestedBy: Type.String({ description: 'The name of the token that asked for it' }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const progressOf = (receipt: ErasureReceipt): Static<typeof Progress> => ({
  id: receipt.id,
  state: receipt.state,
  counts: receipt.counts,
  scope: receipt.scope,
  requestedAt: receipt.requestedAt.toISOString(),
  requestedBy: receipt.requestedBy,
  finishedAt: receipt.finishedAt?.toISOString() ?? null,
});

const erasureDescription =
  'Removes what retention removes (children, raw events, attachments, decisions, notifications, and every media file no ' +
  'other album keeps), ends and deletes the workflows whose histories hold them, and keeps a receipt (what, when, which ' +
  'token, counts; never content). A redelivery of an erased child is answered 2xx and not stored again. Runs in the ' +
  'background: poll the erasure for its progress.';

/** Erasure on request (docs/api.md, "Erasure"): 202 with the erasure's id, and its progress by that id. */
export const erasureRoutes: FastifyPluginAsyncTypebox<ErasureOptions> = async (app, { config, pool, temporal, tenants }) => {
  const service = new TenantService({ pool, tenants });
  const start = async (subject: ErasureSubject, requestedBy: string | undefined) => {
    const receipt = await startErasure(pool, temporal, config.temporal.taskQueue, subject, requestedBy ?? 'unknown');
    return { id: receipt.id, state: 'running' as const };
  };

  app.delete(
    albumPath,
    {
      schema: {
        summary: 'Erase an album',
        description: erasureDescription,
        tags: ['erasure'],
        params: AlbumParams,
        response: { 202: Started, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const key = albumKeyOf(request.params);
      if (!(await findAlbum(pool, key))) throw new HttpError(404, 'album_not_found', 'no child of this album is stored');
      return reply.code(202).send(await start({ scope: 'album', key }, request.access?.tokenName));
    },
  );

  app.delete(
    messagePath,
    {
      schema: {
        summary: 'Erase a message',
        description: `${erasureDescription} A message of an album leaves the album's other children; the album's workflow and notifications go.`,
        tags: ['erasure'],
        params: MessageParams,
        response: { 202: Started, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const key = messageKeyOf(request.params);
      if (!(await findMessage(pool, key))) throw new HttpError(404, 'message_not_found', 'no such message is stored');
      return reply.code(202).send(await start({ scope: 'message', key }, request.access?.tokenName));
    },
  );

  app.delete(
    conversationPath,
    {
      schema: {
        summary: "Erase a conversation (a chat's or a person's data)",
        description: `${erasureDescription} Every album and message of the conversation; 202 also when nothing of it is stored.`,
        tags: ['erasure'],
        params: ConversationParams,
        response: { 202: Started },
      },
    },
    async (request, reply) => {
      const { workspace, provider, account, conversation } = request.params;
      const key = { workspace, provider, accountId: account, conversationId: conversation };
      return reply.code(202).send(await start({ scope: 'conversation', key }, request.access?.tokenName));
    },
  );

  app.delete(
    '/admin/workspaces/:ws/data',
    {
      config: { access: 'all-workspaces' },
      schema: {
        summary: 'Erase a whole workspace (offboarding a customer)',
        description:
          'Removes the workspace first (its webhooks answer 404 from then on, as DELETE /admin/workspaces/<ws>; nothing ' +
          'to do when it was removed already), then, in the background, every album and message of it as an erasure ' +
          'does (without tombstones), its workflows, raw events, quarantined bodies, tombstones, notifications, ' +
          'endpoints with their deliveries and feed, retention setting, and every media file no other workspace ' +
          'keeps. The receipt stays: GET /workspaces/<ws>/erasures/<id> with a "*" token. Once it is done the name ' +
          'is free to be added again. 409: the workspace is declared in the environment (remove it there first).',
        tags: ['erasure', 'admin'],
        params: Type.Object({ ws: TenantName('The workspace') }),
        response: { 202: Started, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const { ws } = request.params;
      const caller = callerOf(request);
      // Erasing implies removing: nothing new arrives for what the erasure removes. A workspace added by
      // another process a moment ago is in this one's registry once a read after now has run.
      if (!tenants.knows(ws)) await tenants.refreshed(Date.now());
      await service.removeWorkspace(caller, ws).catch((err: unknown) => {
        if (!(err instanceof TenantError && err.kind === 'not_found')) throw err;
      });
      const started = await start({ scope: 'workspace', key: { workspace: ws } }, caller.tokenName);
      await auditedChange(
        pool,
        {
          tokenName: caller.tokenName,
          tokenHash: caller.tokenHash,
          action: 'workspace.erase',
          subject: `data of workspace ${ws}: erasure ${started.id}`,
        },
        async () => true,
      );
      caller.log.info({ action: 'workspace.erase', workspace: ws, erasure: started.id }, 'workspace erasure started');
      return reply.code(202).send(started);
    },
  );

  app.get(
    '/workspaces/:workspace/erasures/:id',
    {
      schema: {
        summary: "An erasure's progress",
        tags: ['erasure'],
        params: ErasureParams,
        response: { 200: Progress, 404: ErrorBody },
      },
    },
    async (request) => {
      const receipt = await findErasure(pool, request.params.workspace, request.params.id);
      if (!receipt) throw new HttpError(404, 'erasure_not_found', 'no erasure with this id in this workspace');
      return progressOf(receipt);
    },
  );
};
