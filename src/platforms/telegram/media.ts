// A Telegram file: a fresh getFile (file paths expire), then the file, with the token of the bot the
// child is stored under. A live photo has two: its video (the attachment's file) and its still.
import type { TelegramBot, TelegramConfig } from '../../common/config.js';
import type { StoredAttachment } from '../../db/attachments.js';
import type { MessageKey } from '../../domain/types.js';
import { refusedMediaApi, type MediaApi } from '../api.js';
import type { PlatformMedia } from '../platform.js';
import { createBotApi, redactToken, type TelegramFileRequest } from './bot-api.js';

const apiName = 'the Bot API';

/** The bot whose token the file is downloaded with: the one the child is stored under (its account). */
function botOf(config: TelegramConfig, key: MessageKey): TelegramBot | undefined {
  return [...(config.bots.get(key.workspace)?.values() ?? [])].find((candidate) => candidate.id === key.accountId);
}

/** A file the server names a type for, other than the generic one. */
function namedType(served: string | null): string | null {
  return served !== null && served !== 'application/octet-stream' ? served : null;
}

/**
 * The type a Telegram file is stored with: the message's MIME type, else the file server's when it
 * names one; Telegram photos are always JPEG (the message gives no type for them).
 */
function telegramContentType(row: StoredAttachment, served: string | null): string | null {
  return row.mimeType ?? namedType(served) ?? (row.kind === 'photo' ? 'image/jpeg' : served);
}

/** getFile and the file behind it, with the token of the child's bot, the file stored with the type `typed` gives it. */
function botFile(
  telegram: TelegramConfig,
  key: MessageKey,
  file: TelegramFileRequest,
  typed: (served: string | null) => string | null,
): MediaApi {
  const bot = botOf(telegram, key);
  if (!bot) return refusedMediaApi(apiName, `TELEGRAM_BOTS["${key.workspace}"] has no bot with id ${key.accountId}`);
  const api = createBotApi({ apiRoot: telegram.apiRoot, token: bot.token });
  return {
    apiName,
    async open(signal) {
      const opened = await api.openFile(file, signal);
      if (opened.status !== 'ready') return opened;
      return { ...opened, contentType: typed(opened.contentType) };
    },
    redact: (text) => redactToken(text, bot.token),
  };
}

export const telegramMedia: PlatformMedia = {
  api({ telegram }, row, key): MediaApi | null {
    const file = row.telegramFile;
    if (!file) return null;
    return botFile(telegram, key, { fileId: file.fileId, declaredSize: row.declaredSize }, (served) => telegramContentType(row, served));
  },
  // A live photo's still is a Telegram photo: JPEG unless the file server says otherwise.
  still({ telegram }, row, key): MediaApi | null {
    const still = row.still;
    if (!still) return null;
    return botFile(telegram, key, { fileId: still.fileId, declaredSize: null }, (served) => namedType(served) ?? 'image/jpeg');
  },
};
