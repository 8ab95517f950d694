// The HTTP bodies of their own as TypeBox schemas (errors, the message body, the album list): they
// validate and serialize the responses and feed the OpenAPI document. The album's body and its parts are
// the domain's (src/domain/schemas.ts).

import { Type, type Static, type TSchema } from 'typebox';
import {
  AlbumKeySchema,
  AlbumPhaseSchema,
  childViewFields,
  DecisionViewSchema,
  MessageKeySchema,
  ReviewViewSchema,
} from '../domain/schemas.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const MessageStatusSchema = Type.Object({
  workflowId: Type.String({ description: "its album's workflow, or its own `message:` workflow when standalone" }),
  key: MessageKeySchema,
  albumKey: Nullable(AlbumKeySchema),
  ...childViewFields,
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
      state: AlbumPhaseSchema,
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
