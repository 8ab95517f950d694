// The domain's shared bodies as TypeBox schemas, the one definition of each: the types derive from them
// (`Static<>`), the HTTP routes validate, serialize and document their responses with them, and the
// workflows' queries and notifications answer the same types.

import { Type, type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const AsReceived = Type.Unknown({ description: 'as received' });

const scope = {
  workspace: Type.String(),
  provider: Type.String(),
  accountId: Type.String(),
  conversationId: Type.String(),
};
export const ConversationScopeSchema = Type.Object(scope);
/** Scope shared by every identity of one conversation. */
export type ConversationScope = Static<typeof ConversationScopeSchema>;

export const AlbumKeySchema = Type.Object({ ...scope, albumId: Type.String() });
export type AlbumKey = Static<typeof AlbumKeySchema>;
export const MessageKeySchema = Type.Object({ ...scope, messageId: Type.String() });
export type MessageKey = Static<typeof MessageKeySchema>;

/** Where an album is: collecting children, processed (decided at least once), or closed (its late window ended). */
export const AlbumPhaseSchema = Type.Enum(['collecting', 'processed', 'closed']);
export type AlbumPhase = Static<typeof AlbumPhaseSchema>;

export const ReviewReasonSchema = Type.Enum(['total_conflict', 'duplicate_index', 'invalid_metadata', 'late_item']);
export type ReviewReason = Static<typeof ReviewReasonSchema>;

export const DecisionTriggerSchema = Type.Enum([
  'expected_count_reached',
  'quiet_period',
  'max_wait',
  'late_item',
  'album_full',
  'standalone',
]);
export type DecisionTrigger = Static<typeof DecisionTriggerSchema>;

export const AttachmentStatusSchema = Type.Enum(['pending', 'downloaded', 'failed', 'expired', 'unavailable']);
export type AttachmentStatus = Static<typeof AttachmentStatusSchema>;

export const AttachmentViewSchema = Type.Object({
  position: Type.Integer(),
  status: AttachmentStatusSchema,
  contentType: Nullable(Type.String()),
  bytes: Nullable(Type.Integer()),
  sha256: Nullable(Type.String()),
  error: Nullable(Type.String()),
});
export type AttachmentView = Static<typeof AttachmentViewSchema>;

export const DecisionViewSchema = Type.Object({
  seq: Type.Integer(),
  trigger: DecisionTriggerSchema,
  childMessageIds: Type.Array(Type.String()),
  decidedAt: Type.String({ format: 'date-time' }),
});
export type DecisionView = Static<typeof DecisionViewSchema>;

export const ReviewResolutionSchema = Type.Object(
  { at: Type.String({ format: 'date-time' }), note: Type.String() },
  { description: 'An operator took the album out of the review queue' },
);
export type ReviewResolution = Static<typeof ReviewResolutionSchema>;

export const ReviewViewSchema = Type.Object({
  required: Type.Boolean({ description: 'a reason is present and no operator resolved it since' }),
  reasons: Type.Array(ReviewReasonSchema),
  resolved: Type.Optional(ReviewResolutionSchema),
});
export type ReviewView = Static<typeof ReviewViewSchema>;

export const EarlierVersionSchema = Type.Object(
  {
    caption: Nullable(Type.String()),
    mediaReplaced: Type.Boolean({ description: 'the edit that replaced this version also replaced the attachment' }),
    replacedAt: Type.String({ format: 'date-time', description: "the edit's edit_date" }),
    recordedAt: Type.String({ format: 'date-time', description: 'when albumflow stored that edit' }),
  },
  { description: 'A version of the message that an edit (Telegram edited_* update) replaced' },
);
export type EarlierVersion = Static<typeof EarlierVersionSchema>;

/** What the album body shows of each child, and the message body of one. */
export const childViewFields = {
  index: AsReceived,
  total: AsReceived,
  caption: Nullable(Type.String({ description: 'as the latest edit left it, if the message was edited' })),
  sentAt: Nullable(Type.String()),
  receivedAt: Type.String(),
  attachments: Type.Array(AttachmentViewSchema),
  history: Type.Array(EarlierVersionSchema, { description: 'earlier versions, oldest first; [] for a message never edited' }),
  withdrawnAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'when the message was withdrawn (LINE `unsend`, Telegram `deleted_business_messages`); it is kept. Absent otherwise',
    }),
  ),
};

export const ChildViewSchema = Type.Object({ messageId: Type.String(), ...childViewFields });
export type ChildView = Static<typeof ChildViewSchema>;

export const MediaSummarySchema = Type.Object({
  total: Type.Integer(),
  pending: Type.Integer(),
  downloaded: Type.Integer(),
  failed: Type.Integer(),
  expired: Type.Integer(),
  unavailable: Type.Integer(),
});
export type MediaSummary = Static<typeof MediaSummarySchema>;

export const AlbumViewSchema = Type.Object({
  workflowId: Type.String(),
  key: AlbumKeySchema,
  state: AlbumPhaseSchema,
  expectedTotal: Nullable(Type.Integer()),
  distinctChildren: Type.Integer(),
  expectedCountReached: Type.Boolean(),
  review: ReviewViewSchema,
  children: Type.Array(ChildViewSchema),
  decisions: Type.Array(DecisionViewSchema),
  media: MediaSummarySchema,
});
/** The album's status body, from the workflow's `status` query or from PostgreSQL. */
export type AlbumView = Static<typeof AlbumViewSchema>;
