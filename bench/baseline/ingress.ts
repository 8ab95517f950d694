// The cost baseline's ingress: albumflow's ingress whose dispatcher sends every child at once in a
// signal of its own (no interval, no coalescing).
import { run } from '../../src/serve.js';

await run(
  { http: true, dispatcher: true, worker: false },
  ({ urls }) => `albumflow ingress listening on ${urls.http}, Temporal at ${urls.temporal}, one signal per child\n`,
  { dispatcher: { minSignalIntervalMs: 0, maxChildrenPerSignal: 1 } },
);
