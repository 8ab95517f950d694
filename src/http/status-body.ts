import type { AlbumKey, AttachmentView, DecisionView, JsonValue, MessageKey, ReviewReason, AlbumState } from '../../workflows/types.js';

/** `GET /workspaces/:ws/messages/…`: one child message, standalone or in an album. */
export interface MessageStatus {
  /** The workflow that handles it: its album's, or its own `message:` workflow when standalone. */
  workflowId: string;
  key: MessageKey;
  albumKey: AlbumKey | null;
  index: JsonValue | null;
  total: JsonValue | null;
  caption: string | null;
  sentAt: string | null;
  receivedAt: string;
  lastReceivedAt: string;
  deliveryCount: number;
  attachments: AttachmentView[];
  /** The decisions that included this message. */
  decisions: DecisionView[];
}

export interface AlbumSummary {
  workflowId: string;
  key: AlbumKey;
  state: AlbumState;
  review: { required: boolean; reasons: ReviewReason[] };
  distinctChildren: number;
  firstReceivedAt: string;
  lastReceivedAt: string;
}

/** `GET /workspaces/:ws/albums`: newest first; pass `nextCursor` back as `cursor` for the next page. */
export interface AlbumListBody {
  items: AlbumSummary[];
  nextCursor: string | null;
}
