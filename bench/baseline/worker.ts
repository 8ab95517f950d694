// The cost baseline's worker: albumflow's worker running the baseline's workflows (./workflows.ts).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../src/serve.js';

const here = fileURLToPath(import.meta.url);

await run(
  { http: false, dispatcher: false, worker: true },
  ({ urls }, config) =>
    `albumflow worker polling task queue "${config.temporal.taskQueue}" on ${urls.temporal} with the cost baseline's workflows; Temporal worker metrics at ${urls.workerMetrics}\n`,
  { workflowsPath: path.join(path.dirname(here), `workflows${path.extname(here)}`) },
);
