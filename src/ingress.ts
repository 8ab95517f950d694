// The ingress alone (HTTP + outbox dispatcher); scale it horizontally. Needs TEMPORAL_ADDRESS.
import { ingressReadyLine } from './process/ready-lines.js';
import { run } from './process/run.js';

await run({ http: true, dispatcher: true, worker: false }, ({ urls }) => ingressReadyLine(urls.http, urls.temporal));
