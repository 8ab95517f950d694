// The child message every platform's parser produces, as src/db/ingest.ts stores it.

import { albumWorkflowId, messageWorkflowId } from './keys.js';
import type { AlbumKey, JsonObject, MessageKey } from './types.js';

/** The largest value of PostgreSQL's `integer`. */
export const maxInt32 = 2_147_483_647;

/** The longest event id stored: it is part of the events table's unique index, which PostgreSQL limits to a few KB a row. */
export const maxEventIdLength = 512;

/** Temporal's default limit on workflow id length; it also keeps the unique indexes within PostgreSQL's row limit. */
export const maxWorkflowIdLength = 1000;

/**
 * A file of a Telegram message. Telegram sends no URL: the download asks `getFile` for a path with the
 * bot's token at download time.
 */
export interface TelegramFile {
  /** What `getFile` takes; valid for this bot only. */
  fileId: string;
  /** The same for every bot and over time; cannot be used to download. */
  fileUniqueId: string;
  /** Pixels; null when the media type has none (documents, audio, voice). */
  width: number | null;
  height: number | null;
  /**
   * A live photo's still (Bot API 10): the largest size of the photo beside its video. It is downloaded
   * with the video and shown as its thumbnail; absent for every other file.
   */
  still?: TelegramStill;
}

/** The photo of a live photo, downloaded through getFile like the video it belongs to. */
export interface TelegramStill {
  fileId: string;
  fileUniqueId: string;
}

export interface AttachmentInput {
  position: number;
  kind: string | null;
  url: string | null;
  mimeType: string | null;
  declaredSize: number | null;
  fileName: string | null;
  /** Telegram media only (which never has a URL); null for everything else. */
  telegramFile: TelegramFile | null;
  /**
   * LINE content (`contentProvider.type: line`, no URL): the channel (of LINE_CHANNELS[workspace]) whose
   * access token the content API is called with for the child's message id; null for everything else.
   */
  lineChannel: string | null;
}

export interface AlbumMetadata {
  /** The album object exactly as received. */
  raw: JsonObject;
  /** Usable values: an integer ≥ 0 for the index, ≥ 1 for the total; null when absent or unusable. */
  index: number | null;
  total: number | null;
  /** `index` or `total` was present but wrong-typed, negative, fractional or out of range. */
  metadataInvalid: boolean;
}

/** An album object's index (an integer ≥ 0) and total (≥ 1) as usable values, the object kept as received. */
export function albumMetadataOf(album: JsonObject): AlbumMetadata {
  const index = usableInteger(album.index, 0);
  const total = usableInteger(album.total, 1);
  return { raw: album, index: index.value, total: total.value, metadataInvalid: index.invalid || total.invalid };
}

function usableInteger(value: unknown, minimum: number): { value: number | null; invalid: boolean } {
  if (value === undefined || value === null) return { value: null, invalid: false };
  if (typeof value === 'number' && Number.isInteger(value) && value >= minimum && value <= maxInt32) {
    return { value, invalid: false };
  }
  return { value: null, invalid: true };
}

export interface ChildMessage {
  key: MessageKey;
  /** Null for a standalone message (no `album` or no usable `album.id`, no Telegram `media_group_id`). */
  albumKey: AlbumKey | null;
  /** The album's index and total as the sender gave them; null when it gave none (always for Telegram). */
  album: AlbumMetadata | null;
  caption: string | null;
  /** ISO 8601, or null when the sender gave no valid time. */
  sentAt: string | null;
  attachments: AttachmentInput[];
}

/** Why a parser refuses the identities (`invalid_identity`): either is too long for a workflow id once encoded; null when both fit. */
export function identityProblem(key: MessageKey, albumKey: AlbumKey | null): string | null {
  return identityTooLong(key, albumKey)
    ? `the child or album identity is longer than ${maxWorkflowIdLength} characters once encoded`
    : null;
}

/** Either identity is too long for a workflow id once encoded. */
export function identityTooLong(key: MessageKey, albumKey: AlbumKey | null): boolean {
  return (
    messageWorkflowId(key).length > maxWorkflowIdLength || (albumKey !== null && albumWorkflowId(albumKey).length > maxWorkflowIdLength)
  );
}
