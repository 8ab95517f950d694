// Telegram's Bot API: a bot's webhook, its Updates, and its files through getFile.
import type { Platform } from '../platform.js';
import { telegramCli } from './cli.js';
import { telegramMedia } from './media.js';
import { telegramRoute } from './route.js';

export const telegram: Platform = {
  name: 'telegram',
  // At most ten media in one album (sendMediaGroup takes 2-10); no index and no total: message ids grow within a chat.
  albumProfile: { maxChildren: 10, childOrder: 'message_id' },
  route: () => telegramRoute,
  media: telegramMedia,
  cli: telegramCli,
};
