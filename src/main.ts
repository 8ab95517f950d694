// `npm start`: migrations, then ingress + dispatcher + worker in one process, with an embedded
// PostgreSQL when DATABASE_URL is unset and an embedded Temporal dev server when TEMPORAL_ADDRESS is unset.
import { adminTokenPath } from './http/access/admin-token.js';
import { signInCodeLifetimeMs } from './http/access/session.js';
import { run } from './serve.js';

await run({ http: true, dispatcher: true, worker: true }, ({ urls }, config) => {
  const http = urls.http ?? '';
  const namespace = encodeURIComponent(config.temporal.namespace);
  const workspaces = [...config.workspaceSecrets.keys()];
  const workspace = workspaces[0] ?? '<workspace>';
  const generated = config.apiTokens === undefined;
  const telegramBots = [...config.telegram.bots].flatMap(([ws, bots]) => [...bots.keys()].map((bot) => ({ ws, bot })));
  return [
    '',
    'albumflow is running',
    `  console           ${urls.console ?? ''}   ${generated ? `(a single-use sign-in link, valid for ${signInCodeLifetimeMs / 60_000} minutes)` : '(sign in with a token of API_TOKENS)'}`,
    `  webhook      POST ${http}/webhooks/unifyport/${workspace}`,
    ...telegramBots.map(({ ws, bot }) => `  Telegram     POST ${http}/webhooks/telegram/${encodeURIComponent(ws)}/${encodeURIComponent(bot)}   (npx albumflow telegram set-webhook --workspace ${ws} --bot ${bot} …)`),
    `  status       GET  ${http}/workspaces/${workspace}/albums   (one album: …/albums/<provider>/<account>/<conversation>/<album>)`,
    `  API token         ${generated ? `${adminTokenPath(config.dataDir)} (npx albumflow reads it)` : 'a token of API_TOKENS'}, sent as Authorization: Bearer <token>`,
    `  API docs          ${http}/docs`,
    `  readiness         ${http}/readyz`,
    `  Temporal UI       ${urls.temporalUi ? `${urls.temporalUi}/namespaces/${namespace}/workflows` : '(see your Temporal server)'}`,
    `  Temporal          ${urls.temporal}${config.temporal.address ? '' : ` (embedded dev server, state in ${config.dataDir}/temporal.db)`}`,
    urls.database ? `  PostgreSQL        ${urls.database} (embedded, data in ${config.dataDir}/postgres, password in ${config.dataDir}/postgres.password)` : '',
    workspaces.length === 0 && telegramBots.length === 0
      ? `  workspaces        none configured, so every webhook gets 404: restart with one, e.g. WORKSPACE_SECRETS='{"demo":["demo-secret"]}' npm start`
      : '',
    'Press Ctrl-C to stop.',
    '',
  ]
    .filter((line) => line !== '')
    .join('\n')
    .concat('\n');
});
