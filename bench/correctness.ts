// The run's correctness, checked on every run: each accepted child in a recorded decision, one
// `album.ready` per album, every attachment with a URL downloaded, and every child the ingress alone
// acknowledged stored in its database.
import { setTimeout as sleep } from 'node:timers/promises';
import { createPool, withDatabase } from '../src/db/pool.js';
import type { AppPhase } from './phases/context.js';
import type { RequestRecord } from '../test/harness/load.js';
import { albumReadyCounts, attachmentOutcomes, recordedDecisions, storedChildren, type RecordedDecision } from '../test/harness/rows.js';
import { acceptedChildren, childCount, notStored, undecided } from './records.js';
import type { Correctness } from './report.js';
import type { Stack } from './stack.js';

/** The ingress alone, over every ingest step: children it acknowledged, and how many its database lacks. */
async function ingressAloneCommits(stack: Stack, records: readonly RequestRecord[]): Promise<Correctness['ingressAlone']> {
  const expected = acceptedChildren(records);
  if (expected.size === 0 || stack.ingressAloneDatabase === null) return null;
  const pool = createPool(withDatabase(stack.base, stack.ingressAloneDatabase), { max: 1, applicationName: 'albumflow-bench' });
  try {
    return {
      acceptedChildren: childCount(expected),
      notStored: notStored(expected, await storedChildren(pool, [...expected.keys()])).length,
    };
  } finally {
    await pool.end();
  }
}

export async function checkCorrectness(
  stack: Stack,
  appPhases: readonly AppPhase[],
  ingressAloneChildren: readonly RequestRecord[],
  options: { settleTimeoutMs: number; signal?: AbortSignal },
): Promise<{ correctness: Correctness; decisions: Map<string, RecordedDecision[]> }> {
  const { pool } = stack;
  const expected = acceptedChildren(appPhases.flatMap((phase) => phase.records));
  const workflowIds = [...expected.keys()];
  const readyDeadline = Date.now() + options.settleTimeoutMs;
  let readyCounts: Map<string, number>;
  for (;;) {
    readyCounts = await albumReadyCounts(pool, workflowIds);
    if (readyCounts.size >= workflowIds.length || Date.now() > readyDeadline) break;
    await sleep(250, undefined, { signal: options.signal });
  }
  const decisions = await recordedDecisions(pool, workflowIds);
  const missing = undecided(expected, decisions);
  const decisionsByTrigger: Record<string, number> = {};
  for (const rows of decisions.values())
    for (const row of rows) decisionsByTrigger[row.trigger] = (decisionsByTrigger[row.trigger] ?? 0) + 1;
  const duplicateAlbumReady = [...readyCounts.values()].filter((n) => n > 1).length;
  const ingressAlone = await ingressAloneCommits(stack, ingressAloneChildren);

  const mediaWorkflowIds = [...acceptedChildren(appPhases.filter((phase) => phase.media).flatMap((phase) => phase.records)).keys()];
  let media: Correctness['media'] = null;
  if (mediaWorkflowIds.length > 0) {
    const { byStatus } = await attachmentOutcomes(pool, mediaWorkflowIds);
    const notDownloaded = Object.fromEntries(Object.entries(byStatus).filter(([status]) => status !== 'downloaded'));
    media = { attachments: Object.values(byStatus).reduce((sum, n) => sum + n, 0), notDownloaded };
  }

  const correctness: Correctness = {
    acceptedChildren: childCount(expected),
    missingFromDecisions: missing.length,
    missingExamples: missing.slice(0, 10),
    albums: workflowIds.length,
    duplicateAlbumReady,
    albumsWithoutReady: workflowIds.length - readyCounts.size,
    decisionsByTrigger,
    ingressAlone,
    media,
    ok:
      missing.length === 0 &&
      duplicateAlbumReady === 0 &&
      // A run of phases without the app's (media-store, delivery alone) has no children to check.
      (expected.size > 0 || appPhases.length === 0) &&
      (ingressAlone?.notStored ?? 0) === 0 &&
      Object.keys(media?.notDownloaded ?? {}).length === 0,
  };
  return { correctness, decisions };
}
