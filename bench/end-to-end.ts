// End to end, per complete album of a phase: the last new child's acknowledgement at the load generator → the
// album's first decision recorded in PostgreSQL, and → the `album.media_settled` notification of that
// decision stored (every attachment of its children downloaded or given up). Pure.
import type { RequestRecord } from '../test/harness/load.js';
import type { AttachmentOutcomes, RecordedDecision } from '../test/harness/rows.js';
import { newChildren, workflowIdOf } from './records.js';
import { percentiles, round, roundPercentiles, stepStats, type EndToEnd } from './report.js';

export interface PhaseOutcome {
  decisions: Map<string, RecordedDecision[]>;
  /** By workflow id, then by the seq of the decision it follows; null when the phase's children had no media. */
  mediaSettled: Map<string, Map<number, number>> | null;
  attachments: AttachmentOutcomes | null;
}

export function endToEnd(phase: string, records: readonly RequestRecord[], outcome: PhaseOutcome, quietPeriodMs: number): EndToEnd {
  interface Album {
    size: number;
    hasTotal: boolean;
    lastAck: number;
    accepted: Set<string>;
  }
  const albums = new Map<string, Album>();
  for (const record of records) {
    const workflowId = workflowIdOf(record);
    if (!record.accepted || workflowId === null) continue;
    const album = albums.get(workflowId) ?? {
      size: record.albumSize,
      hasTotal: record.albumHasTotal,
      lastAck: 0,
      accepted: new Set<string>(),
    };
    album.accepted.add(record.messageId);
    if (record.duplicate === false) album.lastAck = Math.max(album.lastAck, record.ackAt);
    albums.set(workflowId, album);
  }
  const sides = {
    withTotal: { decided: [] as number[], mediaSettled: [] as number[], otherwise: 0 },
    withoutTotal: { decided: [] as number[], mediaSettled: [] as number[], otherwise: 0 },
  };
  for (const [workflowId, album] of albums) {
    if (album.accepted.size !== album.size || album.lastAck === 0) continue;
    const first = outcome.decisions.get(workflowId)?.[0];
    const complete = first !== undefined && first.child_message_ids.length === album.size;
    const side = album.hasTotal ? sides.withTotal : sides.withoutTotal;
    const expectedTrigger = album.hasTotal ? 'expected_count_reached' : 'quiet_period';
    if (!complete || first.trigger !== expectedTrigger) {
      side.otherwise += 1;
      continue;
    }
    // An album without a total is decided a quiet period after its last child, by design.
    const from = album.lastAck + (album.hasTotal ? 0 : quietPeriodMs);
    side.decided.push(first.recorded_ms - from);
    const settledAt = outcome.mediaSettled?.get(workflowId)?.get(first.seq);
    if (settledAt !== undefined) side.mediaSettled.push(settledAt - from);
  }
  const stats = stepStats(records, false);
  const figure = (side: (typeof sides)['withTotal']) => ({
    albums: side.decided.length,
    decidedOtherwise: side.otherwise,
    ms: roundPercentiles(percentiles(side.decided)),
    mediaSettledMs: outcome.mediaSettled ? roundPercentiles(percentiles(side.mediaSettled)) : null,
  });
  const attachments = outcome.attachments;
  return {
    phase,
    childrenPerS: stats.durationS > 0 ? round(newChildren(records) / stats.durationS, 1) : 0,
    withTotal: figure(sides.withTotal),
    withoutTotal: figure(sides.withoutTotal),
    media: attachments
      ? {
          attachments: Object.values(attachments.byStatus).reduce((sum, n) => sum + n, 0),
          downloaded: attachments.byStatus.downloaded ?? 0,
          megabytes: round(attachments.bytes / 1e6, 1),
        }
      : null,
  };
}
