import { childTraceparents, insertDecision, markAlbumClosed } from '../src/db/decisions.js';
import { readPrior } from '../src/db/prior.js';
import { decisionsTotal } from '../src/common/metrics.js';
import { annotate, inSpan, linksTo } from '../src/common/tracing.js';
import type { DecisionRecord, PriorAlbum, StoredScope } from '../src/domain/types.js';
import type { MarkClosedInput } from '../workflows/activity-types.js';
import type { ActivityDeps } from './deps.js';

export function createDecisionActivities({ pool, logger }: ActivityDeps) {
  /**
   * Records one decision with the exact children it included through `store` (which may record its
   * notification in the same statement), in a span of its own, counted and logged once: a retry or a
   * replay never stores or counts it twice.
   */
  async function recording<T>(input: DecisionRecord, store: () => Promise<T & { decided: boolean }>): Promise<T & { decided: boolean }> {
    const { workflowId, decision } = input;
    const attributes = {
      'albumflow.decision.seq': decision.seq,
      'albumflow.decision.trigger': decision.trigger,
      'albumflow.decision.children': decision.childMessageIds.length,
    };
    return inSpan('albumflow.decision.record', { attributes }, async (span) => {
      // Linked to the request of every child the decision includes: the album's trace reaches each of them.
      if (span.isRecording() && input.album) span.addLinks(linksTo(await childTraceparents(pool, workflowId, decision.childMessageIds)));
      const stored = await store();
      annotate(span, { 'albumflow.decision.inserted': stored.decided });
      if (stored.decided) {
        decisionsTotal.inc({ trigger: decision.trigger });
        logger.info(
          { workflowId, seq: decision.seq, trigger: decision.trigger, children: decision.childMessageIds.length },
          'decision recorded',
        );
      }
      return stored;
    });
  }

  /** Stores one decision (a standalone message's: its notification is recorded by `notify` after it). */
  async function recordDecision(input: DecisionRecord): Promise<{ inserted: boolean }> {
    const { decided } = await recording(input, async () => ({ decided: (await insertDecision(pool, input)).inserted }));
    return { inserted: decided };
  }

  /** What a fresh run of an album (or standalone message) starts from. */
  async function loadPrior(scope: StoredScope): Promise<PriorAlbum> {
    return readPrior(pool, scope);
  }

  async function markClosed({ workflowId, ...review }: MarkClosedInput): Promise<void> {
    await markAlbumClosed(pool, workflowId, review);
  }

  return { recording, recordDecision, loadPrior, markClosed };
}
