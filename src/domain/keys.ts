import type { AlbumKey, ConversationScope, MessageKey } from './types.js';

function scopeParts(scope: ConversationScope): string[] {
  return [scope.workspace, scope.provider, scope.accountId, scope.conversationId];
}

function join(parts: string[]): string {
  return parts.map((part) => encodeURIComponent(part)).join(':');
}

/** `<ws>:<provider>:<account>:<conversation>:<album>`, each part URL-encoded. */
export function albumKeyString(key: AlbumKey): string {
  return join([...scopeParts(key), key.albumId]);
}

/** `<ws>:<provider>:<account>:<conversation>:<message>`, each part URL-encoded. */
export function childKeyString(key: MessageKey): string {
  return join([...scopeParts(key), key.messageId]);
}

export function albumWorkflowId(key: AlbumKey): string {
  return `album:${albumKeyString(key)}`;
}

export function messageWorkflowId(key: MessageKey): string {
  return `message:${childKeyString(key)}`;
}
