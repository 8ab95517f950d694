// The activities the album and message workflows call, with their timeouts and retry policies.

import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { WorkflowActivities } from './activity-types.js';

/** Download attempts per activity; the last one records a transient failure as `failed`. */
export const downloadFinalAttempt = 5;

/**
 * One attempt downloads a batch of attachments at once; each file has its own attempt limit (five
 * minutes) within the worker's fetch limit, so the attempt's own limit leaves room for waiting files.
 */
export const { downloadAttachments } = proxyActivities<WorkflowActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: downloadFinalAttempt, initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const storeOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;

/**
 * Decision records and notifications are regular activities. A decision record must not be a local
 * activity: `loadPrior` (local) reads the decisions in PostgreSQL, and when a worker dies before the
 * first workflow task completes, the task is replayed without its markers, so `loadPrior` would run
 * again, find the decision its own lost attempt recorded, and the run would treat its children as
 * already decided and never send `album.ready`. They only write to PostgreSQL: a receiver that is down never
 * holds them (outbound delivery, src/delivery/, sends the notifications they record).
 */
export const { recordDecision, notify, recordAndNotify } = proxyActivities<WorkflowActivities>(storeOptions);

/**
 * The closing mark is a local activity: it comes after the late window, never in the workflow task
 * that ran `loadPrior`, and saves the server a task queue round trip, three history events and a
 * workflow task.
 */
export const { markClosed } = proxyLocalActivities<WorkflowActivities>(storeOptions);

export const { loadPrior } = proxyLocalActivities<WorkflowActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
