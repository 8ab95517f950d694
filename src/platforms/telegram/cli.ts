// `albumflow send --telegram`, `albumflow telegram set-webhook|add-bot|remove-bot`.
import crypto from 'node:crypto';
import type { TelegramBot, TelegramConfig } from '../../common/config.js';
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
import { createBotApi } from './bot-api.js';
import { readUpdateTypes } from './parse.js';
import { secretTokenHeader } from './route.js';

const bots: AccountKind = { collection: 'telegram-bots', noun: 'bot' };

/** TELEGRAM_BOTS and TELEGRAM_API_ROOT read as the server reads them, and nothing else of the environment. */
function telegramConfig(cli: CliContext): TelegramConfig {
  return cli.config(['TELEGRAM_BOTS', 'TELEGRAM_API_ROOT']).telegram;
}

function configuredBot(cli: CliContext, telegram: TelegramConfig, name: string): TelegramBot {
  const bot = telegram.bots.get(cli.workspace)?.get(name);
  if (!bot) throw cli.fail(`TELEGRAM_BOTS has no bot "${name}" in workspace "${cli.workspace}"`);
  return bot;
}

/** `send --telegram`: posts each Update as Telegram would, with the bot's secret token. */
async function send(cli: CliContext, file: string): Promise<void> {
  const { workspace } = cli;
  const name = requiredAccount(cli, 'bot', 'TELEGRAM_BOTS');
  const secretToken = cli.option('secret') ?? telegramConfig(cli).bots.get(workspace)?.get(name)?.secretToken;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secretToken) headers[secretTokenHeader] = secretToken;
  for (const { body, parsed } of webhookBodies(cli, file)) {
    const updateId = (parsed as { update_id?: unknown } | null | undefined)?.update_id;
    const { status, body: answer } = await cli.api.request('POST', accountWebhookPath('telegram', workspace, name), { body, headers });
    const shownId = updateId === undefined ? '(none)' : terminalJson(updateId, 0);
    if (status >= 300) throw cli.fail(`${cli.api.refusal(status, answer).message} (update_id ${shownId})`);
    // albumflow answers Telegram with an empty body; anything else is shown.
    cli.say(`${status} update_id ${shownId}${answer === '' ? '' : ` ${terminalJson(answer, 0)}`}`);
  }
}

/** `telegram set-webhook`: makes (or, with --print or an unreachable Bot API, shows) the setWebhook call. */
async function setWebhook(cli: CliContext, args: string[]): Promise<void> {
  if (args.length !== 0) throw unknownCommand(cli, ['set-webhook', ...args]);
  const { workspace } = cli;
  const name = requiredAccount(cli, 'bot', 'TELEGRAM_BOTS');
  const publicUrl = cli.option('public-url')?.replace(/\/+$/, '');
  if (!publicUrl) throw cli.misuse('--public-url <https://…> is needed: where Telegram reaches this albumflow');
  const telegram = telegramConfig(cli);
  // A bot added through the admin API: its tokens are given here (albumflow never shows them again).
  const given = cli.option('token') ?? process.env.TELEGRAM_BOT_TOKEN;
  const givenSecretToken = cli.option('secret-token');
  if (given !== undefined && givenSecretToken === undefined) {
    throw cli.misuse('with --token (or TELEGRAM_BOT_TOKEN), --secret-token is needed: what the bot was added with');
  }
  const bot = given === undefined ? configuredBot(cli, telegram, name) : { name, id: '', token: given, secretToken: givenSecretToken! };
  const settings = {
    url: `${publicUrl}${accountWebhookPath('telegram', workspace, name)}`,
    secretToken: bot.secretToken,
    allowedUpdates: readUpdateTypes,
  };
  const entry = `TELEGRAM_BOTS["${workspace}"]["${name}"]`;
  const call = [
    `POST ${telegram.apiRoot}/bot<${entry}.token>/setWebhook`,
    'content-type: application/json',
    '',
    JSON.stringify({ url: settings.url, secret_token: `<${entry}.secretToken>`, allowed_updates: settings.allowedUpdates }, null, 2),
  ].join('\n');
  if (cli.flag('print')) return cli.say(call);
  await callPlatformApi(cli, 'the Bot API', call, async () => {
    const description = await createBotApi({ apiRoot: telegram.apiRoot, token: bot.token }).setWebhook(settings);
    cli.say(terminalText(`${description}: bot ${bot.id} (${entry}) now posts ${settings.allowedUpdates.join(', ')} to ${settings.url}`));
  });
}

/** `telegram add-bot`: a bot of the admin API; a secret token is generated (and shown once) unless given. */
async function addBot(cli: CliContext, args: string[]): Promise<void> {
  const [workspace, name] = accountArguments(cli, bots, args);
  const token = cli.option('token') ?? process.env.TELEGRAM_BOT_TOKEN;
  if (!token) throw cli.misuse('telegram add-bot needs the bot token: --token, or TELEGRAM_BOT_TOKEN');
  const givenSecretToken = cli.option('secret-token');
  const secretToken = givenSecretToken ?? crypto.randomBytes(32).toString('base64url');
  const bot = await addAccount<{ name: string; botId: string }>(cli, bots, workspace, { name, token, secretToken });
  if (cli.flag('json')) return cli.say(terminalJson(bot));
  cli.say(terminalText(`bot ${bot.name} (id ${bot.botId}) added to ${workspace}: POST ${accountWebhookPath('telegram', workspace, name)}`));
  if (!givenSecretToken) cli.say(terminalText(`its secret token (for setWebhook's secret_token, shown once): ${secretToken}`));
}

function unknownCommand(cli: CliContext, args: string[]): Error {
  return cli.misuse(`unknown telegram command "${args.join(' ')}" (there are: telegram set-webhook, add-bot, remove-bot)`);
}

export const telegramCli: PlatformCli = {
  options: {
    telegram: { type: 'string' },
    bot: { type: 'string' },
    token: { type: 'string' },
    'secret-token': { type: 'string' },
  },
  help: {
    usage: `  albumflow send    --telegram <update.json> --bot B [--workspace demo] [--secret S]
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
    'remove-bot': (cli, args) => removeAccount(cli, bots, args),
  },
};
