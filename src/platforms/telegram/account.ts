import type { RegisteredBot } from '../../tenants/registry.js';
import type { AccountKind, HeaderProof } from '../webhook-route.js';

/** What Telegram sends the `secret_token` of setWebhook in. */
export const secretTokenHeader = 'x-telegram-bot-api-secret-token';

/** A Telegram bot: its webhook is `/webhooks/telegram/<workspace>/<bot>`, proven with its secret token. */
export const bots: AccountKind<RegisteredBot> = {
  platform: 'telegram',
  param: 'bot',
  noun: 'bot',
  title: 'Telegram bot',
  variable: 'TELEGRAM_BOTS',
  collection: 'telegram-bots',
  unknownCode: 'unknown_bot',
  lookup: (tenants, workspace, name) => tenants.telegramBot(workspace, name),
};

/** A bot's webhooks carry its secret token (the `secret_token` it was given to setWebhook with). */
export const secretTokenProof: HeaderProof<RegisteredBot> = {
  header: secretTokenHeader,
  description: 'The secret_token given to setWebhook',
  coversBody: false,
  expected: (bot) => bot.secretToken,
  missing: { code: 'missing_secret_token', message: `the ${secretTokenHeader} header is required` },
  invalid: { code: 'invalid_secret_token', message: `${secretTokenHeader} is not this bot's secret token` },
};
