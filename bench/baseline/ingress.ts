// The cost baseline's ingress: albumflow's ingress whose dispatcher sends every child at once in a
// signal of its own (no interval, no coalescing).
import { ingressReadyLine } from '../../src/process/ready-lines.js';
import { run } from '../../src/process/run.js';

await run({ http: true, dispatcher: true, worker: false }, ({ urls }) => ingressReadyLine(urls.http, urls.temporal), {
  dispatcher: { minSignalIntervalMs: 0, maxChildrenPerSignal: 1 },
});
