import { childTraceparents, insertDecision, markAlbumClosed } from '../src/db/decisions.js';
import { readPrior } from '../src/db/prior.js';
import { decisionsTotal } from '../src/common/metrics.js';
import { annotate, inSpan, linksTo } from '../src/common/tracing.js';
import type { PriorAlbum, StoredScope } from '../src/domain/types.js';
import type { MarkClosedInput, RecordDecisionInput } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';

export function createDecisionActivities({ pool, logger }: ActivityDeps) {
  /** Stores one decision with the exact children it included; a retry or a replay never stores or counts it twice. */
  async function recordDecision(input: RecordDecisionInput): Promise<{ inserted: boolean }> {
    const { workflowId, decision } = input;
    const attributes = {
      'albumflow.decision.seq': decision.seq,
      'albumflow.decision.trigger': decision.trigger,
      'albumflow.decision.children': decision.childMessageIds.length,
    };
    return inSpan('albumflow.decision.record', { attributes }, async (span) => {
      // Linked to the request of every child the decision includes: the album's trace reaches each of them.
      if (span.isRecording() && input.album) span.addLinks(linksTo(await childTraceparents(pool, workflowId, decision.childMessageIds)));
      const { inserted } = await insertDecision(pool, input);
      annotate(span, { 'albumflow.decision.inserted': inserted });
      if (inserted) {
        decisionsTotal.inc({ trigger: decision.trigger });
        logger.info(
          { workflowId, seq: decision.seq, trigger: decision.trigger, children: decision.childMessageIds.length },
          'decision recorded',
        );
      }
      return { inserted };
    });
  }

  /** What a fresh run of an album (or standalone message) starts from. */
  async function loadPrior(scope: StoredScope): Promise<PriorAlbum> {
    return readPrior(pool, scope);
  }

  async function markClosed({ workflowId, ...review }: MarkClosedInput): Promise<void> {
    await markAlbumClosed(pool, workflowId, review);
  }

  return { recordDecision, loadPrior, markClosed };
}
