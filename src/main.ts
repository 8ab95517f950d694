// `npm start`: migrations, then ingress + dispatcher + worker in one process, with an embedded
// PostgreSQL when DATABASE_URL is unset and an embedded Temporal dev server when TEMPORAL_ADDRESS is unset.
import { banner } from './process/banner.js';
import { run } from './process/run.js';

await run({ http: true, dispatcher: true, worker: true }, ({ urls }, config) => banner(urls, config));
