import { Type, type Static, type TSchema } from 'typebox';
import type { AlbumStatus } from '../../workflows/types.js';
import type { AlbumListBody, MessageStatus } from './status-body.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const JsonValue = Type.Unknown({ description: 'as received' });

export const ErrorBody = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'Why the request was refused' },
);

const scope = {
  workspace: Type.String(),
  provider: Type.String(),
  accountId: Type.String(),
  conversationId: Type.String(),
};
export const AlbumKey = Type.Object({ ...scope, albumId: Type.String() });
export const MessageKey = Type.Object({ ...scope, messageId: Type.String() });

const AlbumState = Type.Enum(['collecting', 'processed', 'closed']);
const ReviewReason = Type.Enum(['total_conflict', 'duplicate_index', 'invalid_metadata', 'late_item']);
const Trigger = Type.Enum(['expected_count_reached', 'quiet_period', 'max_wait', 'late_item', 'standalone']);
const AttachmentStatus = Type.Enum(['pending', 'downloaded', 'failed', 'expired', 'unavailable']);

const Attachment = Type.Object({
  position: Type.Integer(),
  status: AttachmentStatus,
  contentType: Nullable(Type.String()),
  bytes: Nullable(Type.Integer()),
  sha256: Nullable(Type.String()),
  error: Nullable(Type.String()),
});

const Decision = Type.Object({
  seq: Type.Integer(),
  trigger: Trigger,
  childMessageIds: Type.Array(Type.String()),
  decidedAt: Type.String({ format: 'date-time' }),
});

const Review = Type.Object({ required: Type.Boolean(), reasons: Type.Array(ReviewReason) });

export const AlbumStatusSchema = Type.Object({
  workflowId: Type.String(),
  key: AlbumKey,
  state: AlbumState,
  expectedTotal: Nullable(Type.Integer()),
  distinctChildren: Type.Integer(),
  expectedCountReached: Type.Boolean(),
  review: Review,
  children: Type.Array(
    Type.Object({
      messageId: Type.String(),
      index: JsonValue,
      total: JsonValue,
      caption: Nullable(Type.String()),
      sentAt: Nullable(Type.String()),
      receivedAt: Type.String(),
      attachments: Type.Array(Attachment),
    }),
  ),
  decisions: Type.Array(Decision),
  media: Type.Object({
    total: Type.Integer(),
    pending: Type.Integer(),
    downloaded: Type.Integer(),
    failed: Type.Integer(),
    expired: Type.Integer(),
    unavailable: Type.Integer(),
  }),
});

export const MessageStatusSchema = Type.Object({
  workflowId: Type.String(),
  key: MessageKey,
  albumKey: Nullable(AlbumKey),
  index: JsonValue,
  total: JsonValue,
  caption: Nullable(Type.String()),
  sentAt: Nullable(Type.String()),
  receivedAt: Type.String(),
  lastReceivedAt: Type.String(),
  deliveryCount: Type.Integer(),
  attachments: Type.Array(Attachment),
  decisions: Type.Array(Decision),
});

export const AlbumListSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      workflowId: Type.String(),
      key: AlbumKey,
      state: AlbumState,
      review: Review,
      distinctChildren: Type.Integer(),
      firstReceivedAt: Type.String(),
      lastReceivedAt: Type.String(),
    }),
  ),
  nextCursor: Nullable(Type.String({ description: 'pass as `cursor` for the next page' })),
});

// The schemas serialize the bodies; these checks keep them and the TypeScript types in step.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type WithUnknownIndex<T> = T extends { children: Array<infer C> } ? Omit<T, 'children'> & { children: Array<Omit<C, 'index' | 'total'> & { index: unknown; total: unknown }> } : never;
const albumSchemaMatches: Same<Static<typeof AlbumStatusSchema>, WithUnknownIndex<AlbumStatus>> = true;
const messageSchemaMatches: Same<Static<typeof MessageStatusSchema>, Omit<MessageStatus, 'index' | 'total'> & { index: unknown; total: unknown }> = true;
const listSchemaMatches: Same<Static<typeof AlbumListSchema>, AlbumListBody> = true;
void [albumSchemaMatches, messageSchemaMatches, listSchemaMatches];
