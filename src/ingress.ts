// The ingress alone (HTTP + outbox dispatcher); scale it horizontally. Needs TEMPORAL_ADDRESS.
import { run } from './serve.js';

await run(
  { http: true, dispatcher: true, worker: false },
  ({ urls }) => `albumflow ingress listening on ${urls.http}, Temporal at ${urls.temporal}\n`,
);
