// The HTTP bodies as TypeBox schemas: they validate and serialize the responses, feed the OpenAPI
// document, and are the one definition of the status types (`Static<>`), which the workflow's query
// answers too (workflows/types.ts re-exports them).

import { Type, type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const AsReceived = Type.Unknown({ description: 'as received' });

export const ErrorBodySchema = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'Why the request was refused' },
);
export type ErrorBody = Static<typeof ErrorBodySchema>;

/** The error answers of a webhook route (refusal, quarantine, body limits, outage). */
export const webhookErrorResponses = {
  400: ErrorBodySchema,
  401: ErrorBodySchema,
  404: ErrorBodySchema,
  413: ErrorBodySchema,
  415: ErrorBodySchema,
  500: ErrorBodySchema,
  503: ErrorBodySchema,
};

const scope = {
  workspace: Type.String(),
  provider: Type.String(),
  accountId: Type.String(),
  conversationId: Type.String(),
};
export const AlbumKeySchema = Type.Object({ ...scope, albumId: Type.String() });
export const MessageKeySchema = Type.Object({ ...scope, messageId: Type.String() });

export const AlbumStateSchema = Type.Enum(['collecting', 'processed', 'closed']);
export type AlbumState = Static<typeof AlbumStateSchema>;

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
const childFields = {
  index: AsReceived,
  total: AsReceived,
  caption: Nullable(Type.String({ description: 'as the latest edit left it, if the message was edited' })),
  sentAt: Nullable(Type.String()),
  receivedAt: Type.String(),
  attachments: Type.Array(AttachmentViewSchema),
  history: Type.Array(EarlierVersionSchema, { description: 'earlier versions, oldest first; [] for a message never edited' }),
};

export const ChildViewSchema = Type.Object({ messageId: Type.String(), ...childFields });
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

export const AlbumStatusSchema = Type.Object({
  workflowId: Type.String(),
  key: AlbumKeySchema,
  state: AlbumStateSchema,
  expectedTotal: Nullable(Type.Integer()),
  distinctChildren: Type.Integer(),
  expectedCountReached: Type.Boolean(),
  review: ReviewViewSchema,
  children: Type.Array(ChildViewSchema),
  decisions: Type.Array(DecisionViewSchema),
  media: MediaSummarySchema,
});
/** The album status body, from the workflow's `status` query or from PostgreSQL. */
export type AlbumStatus = Static<typeof AlbumStatusSchema>;

export const MessageStatusSchema = Type.Object({
  workflowId: Type.String({ description: "its album's workflow, or its own `message:` workflow when standalone" }),
  key: MessageKeySchema,
  albumKey: Nullable(AlbumKeySchema),
  ...childFields,
  lastReceivedAt: Type.String(),
  deliveryCount: Type.Integer(),
  decisions: Type.Array(DecisionViewSchema, { description: 'the decisions that included this message' }),
});
/** `GET /workspaces/:ws/messages/…`: one child message, standalone or in an album. */
export type MessageStatus = Static<typeof MessageStatusSchema>;

export const AlbumListSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      workflowId: Type.String(),
      key: AlbumKeySchema,
      state: AlbumStateSchema,
      review: ReviewViewSchema,
      distinctChildren: Type.Integer(),
      firstReceivedAt: Type.String(),
      lastReceivedAt: Type.String(),
    }),
  ),
  nextCursor: Nullable(Type.String({ description: 'pass as `cursor` for the next page' })),
});
/** `GET /workspaces/:ws/albums`: newest first; pass `nextCursor` back as `cursor` for the next page. */
export type AlbumListBody = Static<typeof AlbumListSchema>;
