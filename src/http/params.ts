import { Type, type Static } from 'typebox';
import type { AlbumKey, MessageKey } from '../../workflows/types.js';

/** One identity part in a URL path (each is URL-encoded by the caller). */
export const Segment = Type.String({ minLength: 1, maxLength: 512, description: 'URL-encoded' });

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
