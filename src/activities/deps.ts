import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';

/** What the worker's activities are bound to. */
export interface ActivityDeps {
  pool: Pool;
  config: Config;
  logger: Logger;
}
