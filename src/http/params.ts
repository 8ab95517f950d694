import { Type, type Static } from 'typebox';
import type { AlbumKey, MessageKey } from '../domain/types.js';
import { IdentifierString } from '../common/text-schemas.js';

/** One identity part in a URL path (each is URL-encoded by the caller). */
export const Segment = IdentifierString({ minLength: 1, maxLength: 512, description: 'URL-encoded' });

/**
 * A row id a page or list continues after, as digits: at most 18, so that it is always within
 * PostgreSQL's bigint (2^63 - 1 has 19) and an identity column never reaches it.
 */
export const rowIdPattern = '^[0-9]{1,18}$';

const scope = { workspace: Segment, provider: Segment, account: Segment, conversation: Segment };

/** `/workspaces/:workspace/albums/:provider/:account/:conversation/:album` */
export const AlbumParams = Type.Object({ ...scope, album: Segment });
/** `/workspaces/:workspace/messages/:provider/:account/:conversation/:message` */
export const MessageParams = Type.Object({ ...scope, message: Segment });

export const albumPath = '/workspaces/:workspace/albums/:provider/:account/:conversation/:album';
export const messagePath = '/workspaces/:workspace/messages/:provider/:account/:conversation/:message';

export function albumKeyOf(p: Static<typeof AlbumParams>): AlbumKey {
  return { workspace: p.workspace, provider: p.provider, accountId: p.account, conversationId: p.conversation, albumId: p.album };
}

export function messageKeyOf(p: Static<typeof MessageParams>): MessageKey {
  return { workspace: p.workspace, provider: p.provider, accountId: p.account, conversationId: p.conversation, messageId: p.message };
}
