// The child message every ingress parser produces (UnifyPort's and Telegram's), as src/db/ingest.ts stores it.

import type { AlbumKey, JsonValue, MessageKey } from '../../workflows/types.js';

type JsonObject = { [key: string]: JsonValue };

export interface AttachmentInput {
  position: number;
  kind: string | null;
  url: string | null;
  mimeType: string | null;
  declaredSize: number | null;
  fileName: string | null;
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

export interface ChildMessage {
  key: MessageKey;
  /** Null for a standalone message (no `album` or no usable `album.id`). */
  albumKey: AlbumKey | null;
  album: AlbumMetadata | null;
  caption: string | null;
  /** ISO 8601, or null when `sent_at` is absent or not a valid ISO 8601 timestamp. */
  sentAt: string | null;
  attachments: AttachmentInput[];
}

