// LINE's Messaging API: a channel's webhook, its events, and message content from the data API.
import type { Platform } from '../platform.js';
import { lineCli } from './cli.js';
import { lineMedia } from './media.js';
import { lineRoute } from './route.js';

export const line: Platform = {
  name: 'line',
  // A LINE image set gives each image its index (from 1) and the total: the count trigger decides it.
  albumProfile: { maxChildren: null, childOrder: 'index' },
  route: () => lineRoute,
  media: lineMedia,
  cli: lineCli,
};
