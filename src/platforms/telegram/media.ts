// A Telegram file: a fresh getFile (file paths expire), then the file, with the token of the bot the
// child is stored under.
import type { TelegramBot, TelegramConfig } from '../../common/config.js';
import type { StoredAttachment } from '../../db/attachments.js';
import type { MessageKey } from '../../domain/types.js';
import { refusedMediaApi, type MediaApi } from '../api.js';
import type { PlatformMedia } from '../platform.js';
import { createBotApi, redactToken } from './bot-api.js';

const apiName = 'the Bot API';

/** The bot whose token the file is downloaded with: the one the child is stored under (its account). */
function botOf(config: TelegramConfig, key: MessageKey): TelegramBot | undefined {
  return [...(config.bots.get(key.workspace)?.values() ?? [])].find((candidate) => candidate.id === key.accountId);
}

/**
 * The type a Telegram file is stored with: the message's MIME type, else the file server's when it
 * names one; Telegram photos are always JPEG (the message gives no type for them).
 */
function telegramContentType(row: StoredAttachment, served: string | null): string | null {
  const named = served !== null && served !== 'application/octet-stream' ? served : null;
  return row.mimeType ?? named ?? (row.kind === 'photo' ? 'image/jpeg' : served);
}

export const telegramMedia: PlatformMedia = {
  api({ telegram }, row, key): MediaApi | null {
    const file = row.telegramFile;
    if (!file) return null;
    const bot = botOf(telegram, key);
    if (!bot) return refusedMediaApi(apiName, `TELEGRAM_BOTS["${key.workspace}"] has no bot with id ${key.accountId}`);
    const api = createBotApi({ apiRoot: telegram.apiRoot, token: bot.token });
    return {
      apiName,
      async open(signal) {
        const opened = await api.openFile({ fileId: file.fileId, declaredSize: row.declaredSize }, signal);
        if (opened.status !== 'ready') return opened;
        return { ...opened, contentType: telegramContentType(row, opened.contentType) };
      },
      redact: (text) => redactToken(text, bot.token),
    };
  },
};
