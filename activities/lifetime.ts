// The activities of data lifetime (docs/design.md, "Data lifetime"): retention's and an erasure's
// bounded batches, the media collector, and the deletion of workflows whose histories hold what an
// erasure removes. Each is idempotent: a retry after a crash finds what is left and removes that.
import { Context } from '@temporalio/activity';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { addCounts, noCounts } from '../src/domain/lifetime.js';
import { erasureTargets, purgeWorkflowRows, recordErasureProgress, workflowIdsOf } from '../src/db/erasures.js';
import { collectObject, mediaGarbage, setAsideMedia, type Collected, type RemovalFailure } from '../src/db/media-collector.js';
import { amendAlbums, purgeRows, resumeStoredAlbums } from '../src/db/purge.js';
import { purgeWorkspaceRemainder } from '../src/db/workspace-erasure.js';
import { expiredAlbums, expiredMessages, purgeAged } from '../src/db/retention.js';
import { MediaStoreError, openMediaStore } from '../src/media/store.js';
import type { LifetimeActivities } from '../workflows/lifetime-types.js';
import type { ActivityDeps } from './deps.js';

const grpcNotFound = 5;

/**
 * How long the collector waits for a store that does not answer (for one object, across passes) before
 * it sets that object, and the rest of its batch, aside: a restart or a blip passes within it, an outage
 * does not hold an erasure or the retention Schedule.
 */
const storeOutageGraceMs = 2 * 60_000;

/** The store's failure of a removal; null for anything else (a bug, the database), which the activity's retry meets. */
function storeFailure(err: unknown): RemovalFailure | null {
  return err instanceof MediaStoreError ? { refused: err.refused, error: err.message } : null;
}

export function createLifetimeActivities(deps: ActivityDeps): LifetimeActivities {
  const { pool, config, logger } = deps;
  const store = deps.store ?? openMediaStore(config.media);
  const defaultDays = config.retention.days;

  /**
   * Deletes every run of each workflow (a running one is terminated first): an album that continued as
   * new has several, and each history holds captions. Runs are found by visibility, which may lag, so
   * the latest run is also deleted by id alone.
   */
  async function deleteWorkflows(temporal: Client, workflowIds: readonly string[]): Promise<number> {
    // Answers how many of them Temporal still had.
    const { namespace } = config.temporal;
    const service = temporal.workflowService;
    let deleted = 0;
    for (const workflowId of new Set(workflowIds)) {
      const runs: Array<string | undefined> = [undefined];
      // A workflow id is URL-encoded between its colons: it holds no double quote to escape.
      for await (const execution of temporal.workflow.list({ query: `WorkflowId = "${workflowId}"` })) runs.push(execution.runId);
      let found = false;
      for (const runId of new Set(runs)) {
        try {
          await service.deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, ...(runId ? { runId } : {}) } });
          found = true;
        } catch (err) {
          if (!(isGrpcServiceError(err) && (err.code as number) === grpcNotFound)) throw err;
        }
      }
      if (found) deleted += 1;
      Context.current().heartbeat();
    }
    return deleted;
  }

  /**
   * Collects one object; while the store does not answer for it (and has not for storeOutageGraceMs),
   * tries again with back-off (1 s doubling to 15 s). Answers a failure only once the object is set aside.
   */
  async function collectOne(sha256: string): Promise<Collected | null> {
    for (let waitMs = 1_000; ; waitMs = Math.min(waitMs * 2, 15_000)) {
      const collected = await collectObject(pool, sha256, () => store.remove(sha256), {
        failureOf: storeFailure,
        outageGraceMs: storeOutageGraceMs,
      });
      if (!collected || !('failure' in collected) || collected.setAside) return collected;
      Context.current().heartbeat();
      await Context.current().sleep(waitMs);
    }
  }

  function temporalClient(): Client {
    if (!deps.temporal)
      throw ApplicationFailure.nonRetryable('this worker has no Temporal client to delete workflows with', 'NoTemporalClient');
    return deps.temporal;
  }

  return {
    async purgeExpired({ limit }) {
      const albumPks = await expiredAlbums(pool, defaultDays, limit);
      const messagePks = await expiredMessages(pool, defaultDays, limit);
      const counts = addCounts(noCounts(), (await purgeRows(pool, { albumPks, messagePks }, { tombstone: false })).counts);
      Context.current().heartbeat();
      const aged = await purgeAged(pool, defaultDays, limit);
      addCounts(counts, aged);
      const more =
        albumPks.length === limit ||
        messagePks.length === limit ||
        [aged.events, aged.quarantine, aged.tombstones].some((n) => n === limit);
      if (counts.albums + counts.messages > 0) logger.info({ counts }, 'retention purged expired albums and messages');
      return { counts, more };
    },

    async collectMedia({ limit }) {
      const queued = await mediaGarbage(pool, limit);
      const counts = noCounts();
      for (const [index, sha256] of queued.entries()) {
        const collected = await collectOne(sha256);
        if (collected?.removed) addCounts(counts, { mediaObjects: 1, mediaBytes: collected.bytes });
        if (collected && 'failure' in collected) {
          counts.mediaFailed += 1;
          logger.warn(
            { sha256, error: collected.failure.error },
            collected.failure.refused
              ? 'the media store refused to delete an object: set aside, tried again by a later collector pass'
              : 'the media store did not answer: the object and the rest of its batch are set aside, tried again by a later collector pass',
          );
          if (!collected.failure.refused) {
            // The store is down: the rest of the batch waits for its retry time, not for the store.
            counts.mediaFailed += await setAsideMedia(
              pool,
              queued.slice(index + 1),
              `not tried, the store was down: ${collected.failure.error}`,
            );
            return { counts, more: false };
          }
        }
        Context.current().heartbeat();
      }
      return { counts, more: queued.length === limit };
    },

    async eraseStep({ subject, limit }) {
      const targets = await erasureTargets(pool, subject, limit);
      const workflowIds = await workflowIdsOf(pool, targets);
      // The workflows first: a running one must not record or notify anything of what goes next.
      const workflows = await deleteWorkflows(temporalClient(), workflowIds);
      // A workspace's name is freed, not guarded: its children get no tombstones (and its old ones go), and
      // its receivers, whose endpoints go with it, are told nothing.
      const whole = subject.scope === 'workspace';
      const purged = await purgeRows(pool, targets, { tombstone: !whole, notices: !whole });
      const counts = addCounts(purged.counts, { workflows });
      // A conversation or a workspace is erased in batches; an album or a message in one.
      const more =
        (subject.scope === 'conversation' || whole) &&
        [targets.albumPks, targets.messagePks, targets.eventPks ?? [], targets.quarantinePks ?? []].some((pks) => pks.length === limit);
      return { counts, more, workflowIds: purged.workflowIds, ...(purged.amended.length > 0 ? { amended: purged.amended } : {}) };
    },

    async resumeAlbums({ albums }) {
      await deleteWorkflows(
        temporalClient(),
        albums.map((album) => album.workflowId),
      );
      const counts = await amendAlbums(pool, albums);
      await resumeStoredAlbums(
        pool,
        albums.map((album) => album.workflowId),
      );
      return counts;
    },

    async forgetWorkflows({ workflowIds }) {
      const workflows = await deleteWorkflows(temporalClient(), workflowIds);
      return { ...(await purgeWorkflowRows(pool, workflowIds)), workflows };
    },

    async eraseWorkspaceRemainder({ workspace, limit }) {
      return purgeWorkspaceRemainder(pool, workspace, limit);
    },

    async recordErasure({ erasureId, counts, done }) {
      await recordErasureProgress(pool, erasureId, counts, done);
    },
  };
}
