// `npm start`: migrations, then ingress + dispatcher + worker in one process, with an embedded
// Temporal dev server when TEMPORAL_ADDRESS is unset.
import { run } from './serve.js';

await run({ http: true, dispatcher: true, worker: true }, ({ urls }, config) => {
  const http = urls.http ?? '';
  const namespace = encodeURIComponent(config.temporal.namespace);
  const workspaces = [...config.workspaceSecrets.keys()];
  const workspace = workspaces[0] ?? '<workspace>';
  return [
    '',
    'albumflow is running',
    `  webhook      POST ${http}/webhooks/unifyport/${workspace}`,
    `  status       GET  ${http}/workspaces/${workspace}/albums   (one album: …/albums/<provider>/<account>/<conversation>/<album>)`,
    `  API docs          ${http}/docs`,
    `  readiness         ${http}/readyz`,
    `  Temporal UI       ${urls.temporalUi ? `${urls.temporalUi}/namespaces/${namespace}/workflows` : '(see your Temporal server)'}`,
    `  Temporal          ${urls.temporal}${config.temporal.address ? '' : ` (embedded dev server, state in ${config.dataDir}/temporal.db)`}`,
    workspaces.length === 0 ? '  No workspace is configured: set WORKSPACE_SECRETS=\'{"demo":["demo-secret"]}\' to accept webhooks.' : '',
    'Press Ctrl-C to stop.',
    '',
  ]
    .filter((line) => line !== '')
    .join('\n')
    .concat('\n');
});
