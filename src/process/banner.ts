// What `npm start` prints once albumflow runs: where to send webhooks, where to look, how to sign in.
import type { Config } from '../common/config.js';
import { adminTokenPath } from '../http/access/admin-token.js';
import { signInCodeLifetimeMs } from '../http/access/session.js';
import type { Service } from './start.js';

export function banner(urls: Service['urls'], config: Config): string {
  const http = urls.http ?? '';
  const namespace = encodeURIComponent(config.temporal.namespace);
  const workspaces = [...config.workspaceSecrets.keys()];
  const telegramBots = [...config.telegram.bots].flatMap(([ws, bots]) => [...bots.keys()].map((bot) => ({ ws, bot })));
  const lineChannels = [...config.line.channels].flatMap(([ws, channels]) => [...channels.keys()].map((channel) => ({ ws, channel })));
  const inPath = (name: string | undefined) => (name === undefined ? '<workspace>' : encodeURIComponent(name));
  // The status URL names a workspace albumflow knows, whichever route its webhooks come by.
  const workspace = inPath(workspaces[0] ?? telegramBots[0]?.ws ?? lineChannels[0]?.ws);
  const generated = config.apiTokens === undefined;
  const unconfigured = workspaces.length === 0 && telegramBots.length === 0 && lineChannels.length === 0;
  return [
    '',
    'albumflow is running',
    `  console           ${urls.console ?? ''}   ${generated ? `(a single-use sign-in link, valid for ${signInCodeLifetimeMs / 60_000} minutes)` : '(sign in with a token of API_TOKENS)'}`,
    // The UnifyPort route serves every workspace that has a signing secret, also one added while it runs.
    `  webhook      POST ${http}/webhooks/unifyport/${inPath(workspaces[0])}${workspaces.length > 0 ? '' : '   (a workspace with a signing secret: npx albumflow secret add <workspace>)'}`,
    ...telegramBots.map(
      ({ ws, bot }) =>
        `  Telegram     POST ${http}/webhooks/telegram/${inPath(ws)}/${encodeURIComponent(bot)}   (npx albumflow telegram set-webhook --workspace ${ws} --bot ${bot} …)`,
    ),
    ...lineChannels.map(
      ({ ws, channel }) =>
        `  LINE         POST ${http}/webhooks/line/${inPath(ws)}/${encodeURIComponent(channel)}   (npx albumflow line set-webhook --workspace ${ws} --channel ${channel} …)`,
    ),
    `  status       GET  ${http}/workspaces/${workspace}/albums   (one album: …/albums/<provider>/<account>/<conversation>/<album>)`,
    `  API token         ${generated ? `${adminTokenPath(config.dataDir)} (npx albumflow reads it)` : 'a token of API_TOKENS'}, sent as Authorization: Bearer <token>`,
    `  API docs          ${http}/docs`,
    `  readiness         ${http}/readyz`,
    `  Temporal UI       ${urls.temporalUi ? `${urls.temporalUi}/namespaces/${namespace}/workflows` : '(see your Temporal server)'}`,
    `  Temporal          ${urls.temporal}${config.temporal.address ? '' : ` (embedded dev server, state in ${config.dataDir}/temporal.db)`}`,
    urls.database
      ? `  PostgreSQL        ${urls.database} (embedded, data in ${urls.databaseDir ?? `${config.dataDir}/postgres`}, password in ${config.dataDir}/postgres.password)`
      : '',
    unconfigured
      ? `  workspaces        none configured in the environment: add one while it runs (npx albumflow workspace add demo; npx albumflow secret add demo), else its webhooks get 404`
      : '',
    'Press Ctrl-C to stop.',
    '',
  ]
    .filter((line) => line !== '')
    .join('\n')
    .concat('\n');
}
