// The cost baseline's worker: albumflow's worker running the baseline's workflows (./workflows.ts).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { workerReadyLine } from '../../src/process/ready-lines.js';
import { run } from '../../src/process/run.js';

const here = fileURLToPath(import.meta.url);

await run(
  { http: false, dispatcher: false, worker: true },
  ({ urls }, config) => workerReadyLine(config.temporal.taskQueue, urls.temporal, urls.workerMetrics),
  { workflowsPath: path.join(path.dirname(here), `workflows${path.extname(here)}`) },
);
