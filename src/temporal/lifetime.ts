// What starts data lifetime's workflows (workflows/lifetime.ts): the retention Schedule every worker
// makes sure of, and an erasure's workflow, started once its receipt is recorded.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleSpec } from '@temporalio/client';
import { workflowTypes } from '../../workflows/definitions.js';
import type { ErasureWorkflowInput } from '../../workflows/lifetime-types.js';
import type { ErasureSubject } from '../domain/lifetime.js';
import { deleteErasure, recordErasure, type ErasureReceipt } from '../db/erasures.js';
import type { Pool } from '../db/pool.js';

/**
 * The Schedule's id, and the id of the retention workflow each of its runs starts: one per task queue,
 * so that deployments sharing a namespace each purge with their own workers.
 */
export const retentionScheduleId = (taskQueue: string): string => `retention:${taskQueue}`;

/**
 * Creates the retention Schedule (a run every `intervalS` seconds; a run still going skips the next), or
 * brings an existing one to this interval and task queue: the Temporal UI lists it under Schedules, with
 * its runs. Every worker calls this at its start; whichever comes first creates it.
 */
export async function ensureRetentionSchedule(client: Client, taskQueue: string, intervalS: number): Promise<void> {
  const spec: ScheduleSpec = { intervals: [{ every: `${intervalS}s` }] };
  const action = {
    type: 'startWorkflow',
    workflowType: workflowTypes.retention,
    workflowId: retentionScheduleId(taskQueue),
    taskQueue,
    args: [{}],
  } as const;
  try {
    await client.schedule.create({
      scheduleId: retentionScheduleId(taskQueue),
      spec,
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      memo: { purpose: 'albumflow retention: purges albums closed longer than their retention (RETENTION_DAYS)' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(retentionScheduleId(taskQueue)).update((previous) => ({ ...previous, spec, action }));
  }
}

/** The workflow id of an erasure: its receipt's id. */
export const erasureWorkflowId = (id: string): string => `erasure:${id}`;

/**
 * Records the erasure's receipt and starts its workflow; a start Temporal refused takes the receipt
 * back (and the caller answers the failure), so no receipt says running while nothing runs.
 */
export async function startErasure(
  pool: Pool,
  temporal: Client,
  taskQueue: string,
  subject: ErasureSubject,
  requestedBy: string,
): Promise<ErasureReceipt> {
  const receipt = await recordErasure(pool, subject, requestedBy);
  const input: ErasureWorkflowInput = { erasureId: receipt.id, subject };
  try {
    await temporal.workflow.start(workflowTypes.erasure, { workflowId: erasureWorkflowId(receipt.id), taskQueue, args: [input] });
  } catch (err) {
    await deleteErasure(pool, receipt.id);
    throw err;
  }
  return receipt;
}
