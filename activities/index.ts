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
  const { recording, ...decisions } = createDecisionActivities(deps);
  const { recordingNotification, notify } = createNotifyActivities(deps);
  return {
    ...decisions,
    notify,
    ...createRecordAndNotifyActivities({ pool: deps.pool, recording, recordingNotification }),
    ...createDownloadActivities(deps),
    ...createLifetimeActivities(deps),
  };
}
