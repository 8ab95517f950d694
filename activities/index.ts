import type { WorkflowActivities } from '../workflows/activity-types.js';
import type { LifetimeActivities } from '../workflows/lifetime-types.js';
import type { ActivityDeps } from './deps.js';
import { createDecisionActivities } from './decisions.js';
import { createDownloadActivities } from './download.js';
import { createLifetimeActivities } from './lifetime.js';
import { createNotifyActivities } from './notify.js';
import { createRecordAndNotifyActivities } from './record-and-notify.js';

/** Every activity the workflows call (albums, messages, retention, erasures), bound to the worker's dependencies. */
export function createActivities(deps: ActivityDeps): WorkflowActivities & LifetimeActivities {
  const decisions = createDecisionActivities(deps);
  const notifications = createNotifyActivities(deps);
  return {
    ...decisions,
    ...notifications,
    ...createRecordAndNotifyActivities({ recordDecision: decisions.recordDecision, notify: notifications.notify }),
    ...createDownloadActivities(deps),
    ...createLifetimeActivities(deps),
  };
}
