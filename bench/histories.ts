// The Temporal counts of a phase: every run of each of its album workflows, fetched with the Temporal
// client once the phase settled, counted (bench/temporal-counts.ts) and summed per album and per photo.
import type { Client } from '@temporalio/client';
import { round } from './report.js';
import { addCounts, countHistory, noCounts, type PhaseCounts, type TemporalCounts } from './temporal-counts.js';

/** Histories fetched at once: enough to keep the frontend busy without crowding the machine. */
const fetchesInFlight = 4;

/** Counts of every run of a workflow, from the latest back through the runs it continued. */
async function countWorkflow(client: Client, workflowId: string): Promise<{ counts: TemporalCounts; runs: number }> {
  let counts = noCounts;
  let runs = 0;
  let runId: string | undefined;
  do {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    counts = addCounts(counts, countHistory(history));
    runs += 1;
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  } while (runId);
  return { counts, runs };
}

function divided(counts: TemporalCounts, by: number): TemporalCounts {
  const result = { ...counts };
  for (const key of Object.keys(result) as Array<keyof TemporalCounts>) result[key] = by > 0 ? round(counts[key] / by, 2) : 0;
  return result;
}

export async function countPhase(client: Client, phase: string, workflowIds: readonly string[], photos: number): Promise<PhaseCounts> {
  let total = noCounts;
  let runs = 0;
  const queue = [...workflowIds];
  const fetcher = async () => {
    for (let workflowId = queue.shift(); workflowId !== undefined; workflowId = queue.shift()) {
      const counted = await countWorkflow(client, workflowId);
      total = addCounts(total, counted.counts);
      runs += counted.runs;
    }
  };
  await Promise.all(Array.from({ length: fetchesInFlight }, fetcher));
  return {
    phase,
    albums: workflowIds.length,
    photos,
    runs,
    total,
    perAlbum: divided(total, workflowIds.length),
    perPhoto: divided(total, photos),
  };
}
