import type { Config } from '../src/config.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/log.js';
import { createAnnounceActivities } from './announce.js';
import { createDownloadActivities } from './download.js';
import { createPublishActivities } from './publish.js';
import { createRecordActivities } from './record.js';

export interface ActivityDeps {
  pool: Pool;
  config: Config;
  logger: Logger;
}

/** Every activity the album and message workflows call, bound to the worker's dependencies. */
export function createActivities(deps: ActivityDeps) {
  const records = createRecordActivities(deps);
  const publishing = createPublishActivities(deps);
  return {
    ...records,
    ...publishing,
    ...createAnnounceActivities({ recordDecision: records.recordDecision, notify: publishing.notify }),
    ...createDownloadActivities(deps),
  };
}
