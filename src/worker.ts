// The Temporal worker alone (album workflows and activities); scale it horizontally. Needs TEMPORAL_ADDRESS.
import { workerReadyLine } from './process/ready-lines.js';
import { run } from './process/run.js';

await run({ http: false, dispatcher: false, worker: true }, ({ urls }, config) =>
  workerReadyLine(config.temporal.taskQueue, urls.temporal, urls.workerMetrics),
);
