// The app's ingress without its dispatcher, for the bench's group-commit step: the same HTTP server,
// schemas, hooks, metrics and batched commits as src/ingress.ts, with nothing handing the children on
// to Temporal, so it does exactly the work the ceiling does (verify, parse, commit) and can be held to
// it on equal terms. Its outbox is never drained: the bench gives it a database of its own.
import { run } from '../src/process/run.js';

await run({ http: true, dispatcher: false, worker: false }, ({ urls }) => `ingress alone listening on ${urls.http}\n`);
