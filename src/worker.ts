// The Temporal worker alone (album workflows and activities); scale it horizontally. Needs TEMPORAL_ADDRESS.
import { workerReadyLine } from './ready-lines.js';
import { run } from './serve.js';

await run({ http: false, dispatcher: false, worker: true }, ({ urls }, config) =>
  workerReadyLine(config.temporal.taskQueue, urls.temporal, urls.workerMetrics),
);
