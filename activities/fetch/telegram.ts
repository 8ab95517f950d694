// A Telegram file: a fresh getFile (file paths expire), then the file, with the token of the bot the
// child is stored under.
import type { TelegramConfig, TelegramBot } from '../../src/common/config.js';
import type { StoredAttachment } from '../../src/db/attachments.js';
import type { MessageKey } from '../../src/domain/types.js';
import { createBotApi, redactToken } from '../../src/telegram/bot-api.js';
import type { ApiFetch } from './api.js';
import { PermanentDownloadError, UnavailableDownloadError } from './errors.js';

/** The bot whose token the file is downloaded with: the one the child is stored under (its account). */
function botOf(config: TelegramConfig, key: MessageKey): TelegramBot {
  const bot = [...(config.bots.get(key.workspace)?.values() ?? [])].find((candidate) => candidate.id === key.accountId);
  if (!bot) throw new PermanentDownloadError('failed', `TELEGRAM_BOTS["${key.workspace}"] has no bot with id ${key.accountId}`);
  return bot;
}

/**
 * The type a Telegram file is stored with: the message's MIME type, else the file server's when it
 * names one; Telegram photos are always JPEG (the message gives no type for them).
 */
function telegramContentType(row: StoredAttachment, served: string | null): string | null {
  const named = served !== null && served !== 'application/octet-stream' ? served : null;
  return row.mimeType ?? named ?? (row.kind === 'photo' ? 'image/jpeg' : served);
}

export function telegramFile(config: TelegramConfig, row: StoredAttachment, key: MessageKey, file: { fileId: string }): ApiFetch {
  const { token } = botOf(config, key);
  const api = createBotApi({ apiRoot: config.apiRoot, token });
  return {
    apiName: 'the Bot API',
    async open(signal) {
      const opened = await api.openFile({ fileId: file.fileId, declaredSize: row.declaredSize }, signal);
      if (opened.status === 'unavailable') throw new UnavailableDownloadError(opened.reason);
      return { body: opened.stream, contentLength: opened.contentLength, contentType: telegramContentType(row, opened.contentType) };
    },
    redact: (text) => redactToken(text, token),
  };
}
