// The workflows of data lifetime (docs/design.md, "Data lifetime"): retention, which the Schedule
// `albumflow-retention` starts, and one erasure per request. Both work in bounded batches, each an
// activity whose result the history shows, with their progress as the workflow's current details.
import { continueAsNew, proxyActivities, setCurrentDetails, sleep, workflowInfo } from '@temporalio/workflow';
import { addCounts, describeCounts, noCounts, type PurgeCounts } from '../src/domain/lifetime.js';
import { purgeBatch, type ErasureWorkflowInput, type LifetimeActivities, type PurgeStep } from './lifetime-types.js';

/** Batches in one run before it continues as new, so that a long purge keeps its history short. */
const batchesPerRun = 100;
/**
 * How long an erasure waits before its last pass: a signal or a child already on its way when the first
 * pass ran (a dispatcher's, an ingress's) has arrived by then, and the last pass removes what it brought.
 */
export const settleTime = '5 seconds';

const { purgeExpired, collectMedia, eraseStep, forgetWorkflows, resumeAlbums, eraseWorkspaceRemainder, recordErasure } =
  proxyActivities<LifetimeActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });

export interface RetentionWorkflowInput {
  /** The counts of the runs this purge continued from. */
  carried?: PurgeCounts;
  /** Retention's rows are done; only media objects are left. */
  collecting?: boolean;
}

/** One purge: every expired album and message, then every media object they left unreferenced. */
export async function retentionWorkflow(input: RetentionWorkflowInput = {}): Promise<PurgeCounts> {
  // A run an older albumflow continued from may carry fewer counts.
  const counts = addCounts(noCounts(), input.carried ?? {});
  let collecting = input.collecting ?? false;
  const show = () =>
    setCurrentDetails(`**retention** · ${collecting ? 'collecting media' : 'purging rows'} · removed ${describeCounts(counts)}`);
  show();
  for (let batches = 0; ; batches++) {
    if (batches === batchesPerRun || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof retentionWorkflow>({ carried: counts, collecting });
    }
    const step: PurgeStep = collecting ? await collectMedia({ limit: purgeBatch }) : await purgeExpired({ limit: purgeBatch });
    addCounts(counts, step.counts);
    if (!step.more) {
      if (collecting) break;
      collecting = true;
    }
    show();
  }
  show();
  return counts;
}

/**
 * One erasure: batch by batch, the workflows of the next albums and messages are deleted and then their
 * rows (each child tombstoned, but a workspace's), then, after a pause, once more what arrived meanwhile;
 * an album that stays, less an erased message, is run again from what is stored; for a workspace every
 * other row of its own goes (src/db/workspace-erasure.ts); then the media.
 * Its counts are recorded with the receipt after every batch.
 */
export async function erasureWorkflow({ erasureId, subject }: ErasureWorkflowInput): Promise<PurgeCounts> {
  const counts = noCounts();
  const workflowIds = new Set<string>();
  const amended = new Map<string, Set<string>>();
  const show = (phase: string) => setCurrentDetails(`**erasure** of a ${subject.scope} · ${phase} · removed ${describeCounts(counts)}`);
  const erase = async () => {
    for (let more = true; more;) {
      const step = await eraseStep({ erasureId, subject, limit: purgeBatch });
      addCounts(counts, step.counts);
      for (const id of step.workflowIds) workflowIds.add(id);
      for (const album of step.amended ?? []) {
        const erased = amended.get(album.workflowId) ?? new Set<string>();
        for (const id of album.messageIds) erased.add(id);
        amended.set(album.workflowId, erased);
      }
      more = step.more;
      await recordErasure({ erasureId, counts, done: false });
      show('removing rows and workflows');
    }
  };
  show('starting');
  await erase();
  await sleep(settleTime);
  await erase();
  const forgotten = await forgetWorkflows({ workflowIds: [...workflowIds] });
  // The same workflow deleted twice is counted once.
  addCounts(counts, { ...forgotten, workflows: 0 });
  if (amended.size > 0) {
    show('resuming the albums that stay');
    const resumed = await resumeAlbums({ albums: [...amended].map(([workflowId, ids]) => ({ workflowId, messageIds: [...ids] })) });
    addCounts(counts, { ...resumed, workflows: 0 });
  }
  if (subject.scope === 'workspace') {
    show("removing the workspace's other rows");
    for (let more = true; more;) {
      const step = await eraseWorkspaceRemainder({ workspace: subject.key.workspace, limit: purgeBatch });
      addCounts(counts, step.counts);
      more = step.more;
    }
    await recordErasure({ erasureId, counts, done: false });
  }
  show('removing media');
  for (let more = true; more;) {
    const step = await collectMedia({ limit: purgeBatch });
    addCounts(counts, step.counts);
    more = step.more;
  }
  await recordErasure({ erasureId, counts, done: true });
  show('done');
  return counts;
}
