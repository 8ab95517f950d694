// The routes children arrive by, and what each one's albums are like.

import type { AlbumProfile } from '../domain/types.js';

/** Where a webhook came from: the `source` of its event id's scope (events table) and of its album. */
export type EventSource = 'unifyport' | 'telegram';

/** Telegram sends at most ten media in one album (sendMediaGroup takes 2-10). */
export const telegramAlbumMaxItems = 10;

const profiles: Record<EventSource, AlbumProfile> = {
  unifyport: { maxChildren: null, childOrder: 'index' },
  telegram: { maxChildren: telegramAlbumMaxItems, childOrder: 'message_id' },
};

/** The album profile of an album whose first child came by this route. */
export function albumProfileOf(source: EventSource): AlbumProfile {
  return profiles[source];
}
