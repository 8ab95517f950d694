// The routes children arrive by, and what each one's albums are like.

import type { AlbumProfile } from '../domain/types.js';

/** Where a webhook came from: the `source` of its event id's scope (events table) and of its album. */
export type EventSource = 'unifyport' | 'telegram' | 'line';

/** Telegram sends at most ten media in one album (sendMediaGroup takes 2-10). */
export const telegramAlbumMaxItems = 10;

const profiles: Record<EventSource, AlbumProfile> = {
  unifyport: { maxChildren: null, childOrder: 'index' },
  telegram: { maxChildren: telegramAlbumMaxItems, childOrder: 'message_id' },
  // A LINE image set gives each image its index (from 1) and the total: the count trigger decides it.
  line: { maxChildren: null, childOrder: 'index' },
};

/** The album profile of an album whose first child came by this route. */
export function albumProfileOf(source: EventSource): AlbumProfile {
  return profiles[source];
}
