// What a workflow run hands to Temporal as one payload: a status body, or the state an album run carries
// across continue-as-new. Pure.

import type { AlbumKey, AlbumView } from '../src/domain/types.js';

/**
 * Largest JSON a run hands to Temporal as one payload (Temporal refuses payloads over 2 MB; a character
 * may take three bytes). A status body over it is read from PostgreSQL by the notify activity.
 */
export const payloadBudgetChars = 512 * 1024;

export function fitsInPayload(value: unknown): boolean {
  return JSON.stringify(value).length <= payloadBudgetChars;
}

/** The album's status as a notification's body, or its key when the status is too large to pass. */
export function albumBody(album: AlbumView, key: AlbumKey): { album: AlbumView } | { albumKey: AlbumKey } {
  return fitsInPayload(album) ? { album } : { albumKey: key };
}
