// `albumflow send --line`, `albumflow line set-webhook|add-channel|remove-channel`.
import type { LineChannel, LineConfig } from '../../common/config.js';
import { terminalJson, terminalText } from '../../common/terminal.js';
import {
  accountArguments,
  accountWebhookPath,
  addAccount,
  callPlatformApi,
  removeAccount,
  requiredAccount,
  webhookBodies,
  type AccountKind,
} from '../cli-kit.js';
import type { CliContext, PlatformCli } from '../platform.js';
import { createMessagingApi, webhookEndpointPath } from './messaging-api.js';
import { lineSignatureHeader } from './route.js';
import { lineSignature } from './signature.js';

const channels: AccountKind = { collection: 'line-channels', noun: 'channel' };

/** LINE_CHANNELS, LINE_API_ROOT and LINE_DATA_API_ROOT read as the server reads them, and nothing else of the environment. */
function lineConfig(cli: CliContext): LineConfig {
  return cli.config(['LINE_CHANNELS', 'LINE_API_ROOT', 'LINE_DATA_API_ROOT']).line;
}

function configuredChannel(cli: CliContext, line: LineConfig, name: string): LineChannel {
  const channel = line.channels.get(cli.workspace)?.get(name);
  if (!channel) throw cli.fail(`LINE_CHANNELS has no channel "${name}" in workspace "${cli.workspace}"`);
  return channel;
}

function lineWebhookPath(workspace: string, channel: string): string {
  return accountWebhookPath('line', workspace, channel);
}

/** `send --line`: posts each webhook body as LINE would, signed with the channel secret. */
async function send(cli: CliContext, file: string): Promise<void> {
  const { workspace } = cli;
  const name = requiredAccount(cli, 'channel', 'LINE_CHANNELS');
  const secret = cli.option('secret') ?? lineConfig(cli).channels.get(workspace)?.get(name)?.channelSecret;
  for (const { body, parsed } of webhookBodies(cli, file)) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (secret) headers[lineSignatureHeader] = lineSignature(secret, body);
    const { status, body: answer } = await cli.api.request('POST', lineWebhookPath(workspace, name), { body, headers });
    const events = (parsed as { events?: unknown } | null | undefined)?.events;
    const shown = Array.isArray(events) ? `${events.length} event${events.length === 1 ? '' : 's'}` : 'a body without events[]';
    if (status >= 300) throw cli.fail(`${cli.api.refusal(status, answer).message} (${shown})`);
    cli.say(`${status} ${shown}${answer === '' ? '' : ` ${terminalJson(answer, 0)}`}`);
  }
}

/** `line set-webhook`: sets (or, with --print or an unreachable API, shows) the channel's webhook endpoint. */
async function setWebhook(cli: CliContext, args: string[]): Promise<void> {
  if (args.length !== 0) throw unknownCommand(cli, ['set-webhook', ...args]);
  const { workspace } = cli;
  const name = requiredAccount(cli, 'channel', 'LINE_CHANNELS');
  const publicUrl = cli.option('public-url')?.replace(/\/+$/, '');
  if (!publicUrl) throw cli.misuse('--public-url <https://…> is needed: where LINE reaches this albumflow');
  const line = lineConfig(cli);
  const channel = configuredChannel(cli, line, name);
  const endpoint = `${publicUrl}${lineWebhookPath(workspace, name)}`;
  const entry = `LINE_CHANNELS["${workspace}"]["${name}"]`;
  const call = [
    `PUT ${line.apiRoot}${webhookEndpointPath}`,
    `authorization: Bearer <${entry}.channelAccessToken>`,
    'content-type: application/json',
    '',
    JSON.stringify({ endpoint }, null, 2),
  ].join('\n');
  if (cli.flag('print')) return cli.say(call);
  await callPlatformApi(cli, 'the LINE API', call, async () => {
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
  const [workspace, name] = accountArguments(cli, channels, args);
  const channelSecret = cli.option('channel-secret') ?? process.env.LINE_CHANNEL_SECRET;
  const channelAccessToken = cli.option('channel-access-token') ?? process.env.LINE_CHANNEL_ACCESS_TOKEN;
  if (!channelSecret || !channelAccessToken) {
    throw cli.misuse(
      'line add-channel needs --channel-secret and --channel-access-token (or LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN)',
    );
  }
  const channel = await addAccount<{ name: string }>(cli, channels, workspace, { name, channelSecret, channelAccessToken });
  if (cli.flag('json')) return cli.say(terminalJson(channel));
  cli.say(terminalText(`channel ${channel.name} added to ${workspace}: POST ${lineWebhookPath(workspace, name)}`));
}

function unknownCommand(cli: CliContext, args: string[]): Error {
  return cli.misuse(`unknown line command "${args.join(' ')}" (there are: line set-webhook, add-channel, remove-channel)`);
}

export const lineCli: PlatformCli = {
  options: {
    line: { type: 'string' },
    channel: { type: 'string' },
    'channel-secret': { type: 'string' },
    'channel-access-token': { type: 'string' },
  },
  help: {
    usage: `  albumflow send    --line <body.json> --channel C [--workspace demo] [--secret S]
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
    'remove-channel': (cli, args) => removeAccount(cli, channels, args),
  },
};
