import fs from 'node:fs';
import type { TelegramBot, TelegramConfig } from '../common/config.js';
import { readUpdateTypes } from '../ingest/telegram.js';
import { BotApiError, createBotApi } from '../telegram/bot-api.js';
import { CliError, cliConfig, misuse, type Api } from './api.js';
import type { Values } from './options.js';
import { say, terminalJson, terminalText } from './terminal.js';

export function readFile(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** TELEGRAM_BOTS and TELEGRAM_API_ROOT read as the server reads them, and nothing else of the environment. */
function telegramConfig(): TelegramConfig {
  return cliConfig(['TELEGRAM_BOTS', 'TELEGRAM_API_ROOT']).telegram;
}

function requiredBot(values: Values): string {
  if (!values.bot) throw misuse(`--bot <name> is needed: a bot of TELEGRAM_BOTS["${values.workspace}"]`);
  return values.bot;
}

function configuredBot(telegram: TelegramConfig, workspace: string, name: string): TelegramBot {
  const bot = telegram.bots.get(workspace)?.get(name);
  if (!bot) throw new CliError(`TELEGRAM_BOTS has no bot "${name}" in workspace "${workspace}"`);
  return bot;
}

function telegramWebhookPath(workspace: string, bot: string): string {
  return `/webhooks/telegram/${encodeURIComponent(workspace)}/${encodeURIComponent(bot)}`;
}

/** The file's bytes as they are when it holds one Update; each Update of a JSON list on its own. */
function updateBodies(file: string): Array<{ body: Buffer; updateId: unknown }> {
  const raw = readFile(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return [{ body: raw, updateId: undefined }];
  }
  const updateIdOf = (update: unknown) => (update as { update_id?: unknown } | null)?.update_id;
  if (!Array.isArray(parsed)) return [{ body: raw, updateId: updateIdOf(parsed) }];
  return parsed.map((update: unknown) => ({ body: Buffer.from(JSON.stringify(update)), updateId: updateIdOf(update) }));
}

/** `send --telegram`: posts each Update as Telegram would, with the bot's secret token. */
export async function sendTelegram(api: Api, values: Values, file: string): Promise<void> {
  const workspace = values.workspace;
  const name = requiredBot(values);
  const secretToken = values.secret ?? telegramConfig().bots.get(workspace)?.get(name)?.secretToken;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secretToken) headers['x-telegram-bot-api-secret-token'] = secretToken;
  for (const { body, updateId } of updateBodies(file)) {
    const { status, body: answer } = await api.request('POST', telegramWebhookPath(workspace, name), { body, headers });
    const shownId = updateId === undefined ? '(none)' : terminalJson(updateId, 0);
    if (status >= 300) throw new CliError(`${api.refusal(status, answer).message} (update_id ${shownId})`);
    // albumflow answers Telegram with an empty body; anything else is shown.
    say(`${status} update_id ${shownId}${answer === '' ? '' : ` ${terminalJson(answer, 0)}`}`);
  }
}

/** `telegram set-webhook`: makes (or, with --print or an unreachable Bot API, shows) the setWebhook call. */
export async function setWebhook(values: Values): Promise<void> {
  const workspace = values.workspace;
  const name = requiredBot(values);
  const publicUrl = values['public-url']?.replace(/\/+$/, '');
  if (!publicUrl) throw misuse('--public-url <https://…> is needed: where Telegram reaches this albumflow');
  const telegram = telegramConfig();
  // A bot added through the admin API: its tokens are given here (albumflow never shows them again).
  const given = values.token ?? process.env.TELEGRAM_BOT_TOKEN;
  if (given !== undefined && values['secret-token'] === undefined) {
    throw misuse('with --token (or TELEGRAM_BOT_TOKEN), --secret-token is needed: what the bot was added with');
  }
  const bot =
    given === undefined ? configuredBot(telegram, workspace, name) : { name, id: '', token: given, secretToken: values['secret-token']! };
  const settings = {
    url: `${publicUrl}${telegramWebhookPath(workspace, name)}`,
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
  if (values.print) {
    say(call);
    return;
  }
  try {
    const description = await createBotApi({ apiRoot: telegram.apiRoot, token: bot.token }).setWebhook(settings);
    say(terminalText(`${description}: bot ${bot.id} (${entry}) now posts ${settings.allowedUpdates.join(', ')} to ${settings.url}`));
  } catch (err) {
    if (!(err instanceof BotApiError)) throw err;
    // The Bot API's description, on one line.
    const message = terminalText(err.message);
    if (err.retryable) throw new CliError(`${message}\n\nThe call to make once the Bot API is reachable:\n\n${call}`);
    throw new CliError(message);
  }
}
