import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isGrpcServiceError, WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { Type } from 'typebox';
import { maxNoteLength, resolveReviewUpdate, retryDownloadsUpdate, workflowTypes } from '../../workflows/definitions.js';
import type { AlbumWorkflowInput } from '../../workflows/types.js';
import type { Config } from '../common/config.js';
import { recordOperatorAction, recordReviewResolution } from '../db/actions.js';
import { markRetried } from '../db/attachments.js';
import type { Pool } from '../db/pool.js';
import { findAlbum } from '../db/status.js';
import { albumProfileOf } from '../platforms/index.js';
import { startSearchAttributes } from '../temporal/workflow-start.js';
import { HttpError } from '../common/http-error.js';
import { AlbumParams, albumKeyOf, albumPath } from './params.js';
import { ProseString } from '../common/text-schemas.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import { ReviewResolutionSchema } from '../domain/schemas.js';

export interface ActionOptions {
  config: Config;
  pool: Pool;
  temporal: Client;
}

const grpcNotFound: number = 5;

/** The album's workflow run has ended: nothing is running that could carry the action out. */
function workflowClosed(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const cause = err instanceof Error ? err.cause : undefined;
  return [err, cause].some((e) => isGrpcServiceError(e) && (e.code as number) === grpcNotFound);
}

/** The workflow refused the update (its validator or handler threw an ApplicationFailure of this type). */
function refusedAs(err: unknown, type: string): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === type;
}

/**
 * The operator actions (docs/api.md, "Operator actions"): each is carried out by the album's workflow
 * as an update (so it shows in its history), then recorded in PostgreSQL.
 */
export const actionRoutes: FastifyPluginAsyncTypebox<ActionOptions> = async (app, { config, pool, temporal }) => {
  async function albumOf(params: { workspace: string; provider: string; account: string; conversation: string; album: string }) {
    const key = albumKeyOf(params);
    const album = await findAlbum(pool, key);
    if (!album) throw new HttpError(404, 'album_not_found', 'no child of this album was ever stored');
    return { key, album };
  }

  app.post(
    `${albumPath}/actions/retry-downloads`,
    {
      schema: {
        summary: 'Try every failed or expired attachment of an album again',
        description: 'The running album workflow starts each download again, exactly like a first attempt. 409 once the album is closed.',
        tags: ['actions'],
        params: AlbumParams,
        response: {
          202: Type.Object({ status: Type.Literal('accepted'), retried: Type.Integer({ description: 'attachments set back to pending' }) }),
          404: ErrorBody,
          409: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { album } = await albumOf(request.params);
      let retried;
      try {
        retried = await temporal.workflow.getHandle(album.workflowId).executeUpdate(retryDownloadsUpdate);
      } catch (err) {
        if (workflowClosed(err) || refusedAs(err, 'AlbumClosed')) {
          throw new HttpError(409, 'album_closed', "the album's workflow is closed: nothing can be retried");
        }
        throw err;
      }
      await markRetried(pool, album.id, retried.attachments);
      await recordOperatorAction(pool, {
        workflowId: album.workflowId,
        action: 'retry-downloads',
        detail: retried,
        requestedBy: request.access?.tokenHash ?? null,
      });
      return reply.code(202).send({ status: 'accepted' as const, retried: retried.attachments.length });
    },
  );

  app.post(
    `${albumPath}/actions/resolve-review`,
    {
      schema: {
        summary: 'Take an album out of the review queue',
        description: 'The album keeps its review reasons and shows the resolution; a later reason puts it back in the queue.',
        tags: ['actions'],
        params: AlbumParams,
        body: Type.Object({ note: ProseString({ maxLength: maxNoteLength, default: '' }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({ status: Type.Literal('resolved'), resolved: ReviewResolutionSchema }),
          404: ErrorBody,
          409: ErrorBody,
        },
      },
    },
    async (request) => {
      const { key, album } = await albumOf(request.params);
      const input: AlbumWorkflowInput = { key, timings: config.album, profile: albumProfileOf(album.source) };
      // A closed album's workflow is started again for the update: the new run loads the album from
      // PostgreSQL, takes the resolution and closes.
      const start = new WithStartWorkflowOperation(workflowTypes.album, {
        workflowId: album.workflowId,
        taskQueue: config.temporal.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: startSearchAttributes(key),
      });
      let resolved;
      try {
        resolved = await temporal.workflow.executeUpdateWithStart(resolveReviewUpdate, {
          args: [{ note: request.body.note }],
          startWorkflowOperation: start,
        });
      } catch (err) {
        if (refusedAs(err, 'NoReviewReasons')) throw new HttpError(409, 'review_not_required', 'the album has no review reason to resolve');
        if (refusedAs(err, 'InvalidNote')) throw new HttpError(400, 'invalid_note', (err as WorkflowUpdateFailedError).cause!.message);
        throw err;
      }
      await recordReviewResolution(pool, album.workflowId, resolved);
      await recordOperatorAction(pool, {
        workflowId: album.workflowId,
        action: 'resolve-review',
        detail: resolved,
        requestedBy: request.access?.tokenHash ?? null,
      });
      return { status: 'resolved' as const, resolved };
    },
  );
};
