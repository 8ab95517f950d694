// `albumflow send --line`, `albumflow line set-webhook|add-channel|remove-channel`.
import { terminalJson, terminalText } from '../../common/terminal.js';
import * as kit from '../cli-kit.js';
import type { CliContext, PlatformCli } from '../platform.js';
import { channels } from './account.js';
import { createMessagingApi, webhookEndpointPath } from './messaging-api.js';
import { webhookTimes } from './parse.js';
import { lineSignature, lineSignatureHeader } from './signature.js';

/** LINE_CHANNELS, LINE_API_ROOT and LINE_DATA_API_ROOT read as the server reads them, and nothing else of the environment. */
const lineConfig = (cli: CliContext) => cli.config(['LINE_CHANNELS', 'LINE_API_ROOT', 'LINE_DATA_API_ROOT']).line;

const lineWebhookPath = (workspace: string, channel: string) => kit.accountWebhookPath('line', workspace, channel);

/** `send --line`: posts each webhook body as LINE would, signed with the channel secret. */
async function send(cli: CliContext, file: string): Promise<void> {
  const name = kit.requiredAccount(cli, channels);
  const secret = cli.option('secret') ?? lineConfig(cli).channels.get(cli.workspace)?.get(name)?.channelSecret;
  await kit.postWebhookBodies(
    cli,
    lineWebhookPath(cli.workspace, name),
    file,
    (body): Record<string, string> => (secret ? { [lineSignatureHeader]: lineSignature(secret, body) } : {}),
    (webhook) => {
      const events = (webhook as { events?: unknown } | null | undefined)?.events;
      return Array.isArray(events) ? `${events.length} event${events.length === 1 ? '' : 's'}` : 'a body without events[]';
    },
    webhookTimes,
  );
}

/** `line set-webhook`: sets (or, with --print or an unreachable API, shows) the channel's webhook endpoint. */
async function setWebhook(cli: CliContext, args: string[]): Promise<void> {
  const { name, url: endpoint, entry } = kit.webhookTarget(cli, args, { name: 'line', title: 'LINE' }, channels);
  const line = lineConfig(cli);
  const channel = kit.configuredAccount(cli, line.channels, channels, name);
  const call = [
    `PUT ${line.apiRoot}${webhookEndpointPath}`,
    `authorization: Bearer <${entry}.channelAccessToken>`,
    'content-type: application/json',
    '',
    JSON.stringify({ endpoint }, null, 2),
  ].join('\n');
  if (cli.flag('print')) return cli.say(call);
  await kit.callPlatformApi(cli, 'the LINE API', call, async () => {
    const api = createMessagingApi({
      apiRoot: line.apiRoot,
      dataApiRoot: line.dataApiRoot,
      channelAccessToken: channel.channelAccessToken,
    });
    await api.setWebhookEndpoint(endpoint);
    cli.say(terminalText(`the webhook URL of ${entry} is now ${endpoint}; turn on "Use webhook" in the LINE Developers console`));
  });
}

/** `line add-channel`: a channel of the admin API. */
async function addChannel(cli: CliContext, args: string[]): Promise<void> {
  const [workspace, name] = kit.accountArguments(cli, channels, args);
  const channelSecret = cli.option('channel-secret') ?? process.env.LINE_CHANNEL_SECRET;
  const channelAccessToken = cli.option('channel-access-token') ?? process.env.LINE_CHANNEL_ACCESS_TOKEN;
  if (!channelSecret || !channelAccessToken) {
    throw cli.misuse(
      'line add-channel needs --channel-secret and --channel-access-token (or LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN)',
    );
  }
  const channel = await kit.addAccount<{ name: string }>(cli, channels, workspace, { name, channelSecret, channelAccessToken });
  if (cli.flag('json')) return cli.say(terminalJson(channel));
  cli.say(terminalText(`channel ${channel.name} added to ${workspace}: POST ${lineWebhookPath(workspace, name)}`));
}

export const lineCli: PlatformCli = {
  options: {
    line: { type: 'string' },
    channel: { type: 'string' },
    'channel-secret': { type: 'string' },
    'channel-access-token': { type: 'string' },
  },
  help: {
    usage: `  albumflow send    --line <body.json> --channel C [--workspace demo] [--secret S] [--now]
  albumflow line set-webhook --channel C --public-url URL [--workspace demo] [--print]
  albumflow line add-channel <workspace> <channel> --channel-secret S --channel-access-token T
  albumflow line remove-channel <workspace> <channel>`,
    options: `  --line FILE       send a LINE webhook body (or a JSON list of bodies, one request each, in order) to
                    POST /webhooks/line/<workspace>/<channel>, signed with --secret, else
                    LINE_CHANNELS[workspace][channel].channelSecret
  --channel C       a channel name of LINE_CHANNELS[workspace]
  --channel-secret S, --channel-access-token T
                    for line add-channel (else LINE_CHANNEL_SECRET, LINE_CHANNEL_ACCESS_TOKEN)`,
  },
  sendOption: 'line',
  send,
  commands: {
    'set-webhook': setWebhook,
    'add-channel': addChannel,
    'remove-channel': (cli, args) => kit.removeAccount(cli, channels, args),
  },
};
