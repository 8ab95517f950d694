// `albumflow send --telegram`, `albumflow telegram set-webhook|add-bot|remove-bot`.
import crypto from 'node:crypto';
import { terminalJson, terminalText } from '../../common/terminal.js';
import * as kit from '../cli-kit.js';
import type { CliContext, PlatformCli } from '../platform.js';
import { bots, secretTokenHeader } from './account.js';
import { createBotApi } from './bot-api.js';
import { readUpdateTypes, updateTimes } from './parse.js';

/** TELEGRAM_BOTS and TELEGRAM_API_ROOT read as the server reads them, and nothing else of the environment. */
const telegramConfig = (cli: CliContext) => cli.config(['TELEGRAM_BOTS', 'TELEGRAM_API_ROOT']).telegram;

/** `send --telegram`: posts each Update as Telegram would, with the bot's secret token. */
async function send(cli: CliContext, file: string): Promise<void> {
  const name = kit.requiredAccount(cli, bots);
  const secretToken = cli.option('secret') ?? telegramConfig(cli).bots.get(cli.workspace)?.get(name)?.secretToken;
  await kit.postWebhookBodies(
    cli,
    kit.accountWebhookPath('telegram', cli.workspace, name),
    file,
    (): Record<string, string> => (secretToken ? { [secretTokenHeader]: secretToken } : {}),
    (update) => {
      const updateId = (update as { update_id?: unknown } | null | undefined)?.update_id;
      return `update_id ${updateId === undefined ? '(none)' : terminalJson(updateId, 0)}`;
    },
    updateTimes,
  );
}

/** `telegram set-webhook`: makes (or, with --print or an unreachable Bot API, shows) the setWebhook call. */
async function setWebhook(cli: CliContext, args: string[]): Promise<void> {
  const { name, url, entry } = kit.webhookTarget(cli, args, { name: 'telegram', title: 'Telegram' }, bots);
  const telegram = telegramConfig(cli);
  // A bot added through the admin API: its tokens are given here (albumflow never shows them again).
  const given = cli.option('token') ?? process.env.TELEGRAM_BOT_TOKEN;
  const givenSecretToken = cli.option('secret-token');
  if (given !== undefined && givenSecretToken === undefined) {
    throw cli.misuse('with --token (or TELEGRAM_BOT_TOKEN), --secret-token is needed: what the bot was added with');
  }
  const bot =
    given === undefined
      ? kit.configuredAccount(cli, telegram.bots, bots, name)
      : { name, id: '', token: given, secretToken: givenSecretToken! };
  const settings = {
    url,
    secretToken: bot.secretToken,
    allowedUpdates: readUpdateTypes,
  };
  const call = [
    `POST ${telegram.apiRoot}/bot<${entry}.token>/setWebhook`,
    'content-type: application/json',
    '',
    JSON.stringify({ url: settings.url, secret_token: `<${entry}.secretToken>`, allowed_updates: settings.allowedUpdates }, null, 2),
  ].join('\n');
  if (cli.flag('print')) return cli.say(call);
  await kit.callPlatformApi(cli, 'the Bot API', call, async () => {
    const description = await createBotApi({ apiRoot: telegram.apiRoot, token: bot.token }).setWebhook(settings);
    cli.say(terminalText(`${description}: bot ${bot.id} (${entry}) now posts ${settings.allowedUpdates.join(', ')} to ${settings.url}`));
  });
}

/** `telegram add-bot`: a bot of the admin API; a secret token is generated (and shown once) unless given. */
async function addBot(cli: CliContext, args: string[]): Promise<void> {
  const [workspace, name] = kit.accountArguments(cli, bots, args);
  const token = cli.option('token') ?? process.env.TELEGRAM_BOT_TOKEN;
  if (!token) throw cli.misuse('telegram add-bot needs the bot token: --token, or TELEGRAM_BOT_TOKEN');
  const givenSecretToken = cli.option('secret-token');
  const secretToken = givenSecretToken ?? crypto.randomBytes(32).toString('base64url');
  const bot = await kit.addAccount<{ name: string; botId: string }>(cli, bots, workspace, { name, token, secretToken });
  if (cli.flag('json')) return cli.say(terminalJson(bot));
  cli.say(
    terminalText(`bot ${bot.name} (id ${bot.botId}) added to ${workspace}: POST ${kit.accountWebhookPath('telegram', workspace, name)}`),
  );
  if (!givenSecretToken) cli.say(terminalText(`its secret token (for setWebhook's secret_token, shown once): ${secretToken}`));
}

export const telegramCli: PlatformCli = {
  options: {
    telegram: { type: 'string' },
    bot: { type: 'string' },
    token: { type: 'string' },
    'secret-token': { type: 'string' },
  },
  help: {
    usage: `  albumflow send    --telegram <update.json> --bot B [--workspace demo] [--secret S] [--now]
  albumflow telegram set-webhook --bot B --public-url URL [--workspace demo] [--print]
                                 [--token T --secret-token S]   (a bot of the admin API)
  albumflow telegram add-bot <workspace> <bot> --token T [--secret-token S] | remove-bot <workspace> <bot>`,
    options: `  --telegram FILE   send a Telegram Update (or a JSON list of Updates, one request each, in order) to
                    POST /webhooks/telegram/<workspace>/<bot>, with --secret as the bot's secret token (else
                    TELEGRAM_BOTS[workspace][bot].secretToken)
  --bot B           a bot name of TELEGRAM_BOTS[workspace]
  --token T         for telegram add-bot: the bot token (else TELEGRAM_BOT_TOKEN)
  --secret-token S  for telegram add-bot: setWebhook's secret_token (default: one generated and shown once)`,
  },
  sendOption: 'telegram',
  send,
  commands: {
    'set-webhook': setWebhook,
    'add-bot': addBot,
    'remove-bot': (cli, args) => kit.removeAccount(cli, bots, args),
  },
};
