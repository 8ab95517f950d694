// Every type a notification may have (DESIGN.md §16): what an endpoint subscribes to and what the feed filters
// by. NotificationType (types.ts) names the ones the album workflows send; an erasure sends the other two.
import type { NotificationType } from './types.js';

export type ErasureNoticeType = 'album.erased' | 'message.erased';

export type AnyNotificationType = NotificationType | ErasureNoticeType;

export const notificationTypes: readonly AnyNotificationType[] = [
  'album.ready',
  'album.updated',
  'album.media_settled',
  'message.ready',
  'album.erased',
  'message.erased',
];

export function isNotificationType(text: string): text is AnyNotificationType {
  return (notificationTypes as readonly string[]).includes(text);
}
