// The Temporal worker alone (album workflows and activities); scale it horizontally. Needs TEMPORAL_ADDRESS.
import { run } from './serve.js';

await run(
  { http: false, dispatcher: false, worker: true },
  ({ urls }, config) =>
    `albumflow worker polling task queue "${config.temporal.taskQueue}" on ${urls.temporal}; Temporal worker metrics at ${urls.workerMetrics}\n`,
);
