import type { Config } from '../src/config.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/log.js';
import { createDecisionActivities } from './decisions.js';
import { createDownloadActivities } from './download.js';
import { createNotifyActivities } from './notify.js';
import { createRecordAndNotifyActivities } from './record-and-notify.js';

export interface ActivityDeps {
  pool: Pool;
  config: Config;
  logger: Logger;
}

/** Every activity the album and message workflows call, bound to the worker's dependencies. */
export function createActivities(deps: ActivityDeps) {
  const decisions = createDecisionActivities(deps);
  const notifications = createNotifyActivities(deps);
  return {
    ...decisions,
    ...notifications,
    ...createRecordAndNotifyActivities({ recordDecision: decisions.recordDecision, notify: notifications.notify }),
    ...createDownloadActivities(deps),
  };
}
