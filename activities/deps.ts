import type { Client } from '@temporalio/client';
import type { Config } from '../src/common/config.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/common/log.js';
import type { MediaStore } from '../src/media/store.js';

/** What the worker's activities are bound to. */
export interface ActivityDeps {
  pool: Pool;
  config: Config;
  logger: Logger;
  /** The media store (default: the one the configuration names). */
  store?: MediaStore;
  /** The Temporal client an erasure deletes workflows with. */
  temporal?: Client;
}
