// What a notification is: its stable id, and the data it is recorded with — the album (or the message) as
// the decision left it, without media links (those are minted at each attempt and each feed read,
// src/delivery/materialize.ts): the content of one notification never changes.
import type { NotificationToRecord } from '../db/deliveries.js';
import type { Queryable } from '../db/pool.js';
import { albumStatusFromDatabase, findAlbum } from '../db/status.js';
import type { AlbumKey, AlbumView, ChildEdit, ChildWithdrawal, DecisionView, NotificationType } from '../domain/types.js';
import { albumProfileOf } from '../platforms/index.js';
import type { NotifyInput } from '../../workflows/activity-types.js';

/**
 * `<workflowId>/<seq>` for the notification a decision causes, `<workflowId>/<seq>/album.media_settled`
 * for its first media notice and `…/album.media_settled/<n>` for the n-th, `<workflowId>/edited/<message
 * id, URL-encoded>/<version>` for the edit of a decided child (whichever decision it follows), and
 * `<workflowId>/<unsent | deleted>/<message id, URL-encoded>` for its withdrawal. The same on every
 * retry, so receivers can deduplicate.
 */
export function notificationId(
  workflowId: string,
  seq: number,
  type: NotificationType,
  notice = 1,
  edit?: ChildEdit,
  unsent?: ChildWithdrawal,
): string {
  if (edit) return `${workflowId}/edited/${encodeURIComponent(edit.messageId)}/${edit.version}`;
  if (unsent) return `${workflowId}/${unsent.change ?? 'unsent'}/${encodeURIComponent(unsent.messageId)}`;
  if (type !== 'album.media_settled') return `${workflowId}/${seq}`;
  return notice > 1 ? `${workflowId}/${seq}/${type}/${notice}` : `${workflowId}/${seq}/${type}`;
}

/**
 * The album as PostgreSQL records it, for a notification whose input names the album without its view (a
 * view too large for a workflow payload); `deciding`, recorded in the same statement, counts as recorded.
 */
async function storedAlbum(db: Queryable, workflowId: string, key: AlbumKey, deciding: DecisionView | undefined): Promise<AlbumView> {
  const album = await findAlbum(db, key);
  if (!album) throw new Error(`album ${workflowId} is not stored`);
  return albumStatusFromDatabase(db, album, key, {
    childOrder: albumProfileOf(album.source).childOrder,
    ...(deciding ? { deciding } : {}),
  });
}

/**
 * The notification to record for this input, at `recordedAt`. `deciding` is the decision recorded in the same
 * statement, when there is one.
 */
export async function notificationOf(
  db: Queryable,
  input: NotifyInput,
  recordedAt: Date,
  deciding?: DecisionView,
): Promise<NotificationToRecord> {
  const { workflowId, type, decision } = input;
  const id = notificationId(workflowId, input.seq, type, input.notice, input.edit, input.unsent);
  if (input.type === 'message.ready') {
    const { message } = input;
    return { id, workflowId, workspace: message.key.workspace, type, data: { message, decision }, recordedAt, whileStored: true };
  }
  // A withdrawal is told under its platform's word (LINE: unsent, Telegram: deleted), the child under the same key.
  const withdrawn = input.unsent && {
    change: input.unsent.change ?? 'unsent',
    messageId: input.unsent.messageId,
    withdrawnAt: input.unsent.withdrawnAt,
  };
  const updated = input.edit ? 'edited' : (withdrawn?.change ?? 'late_item');
  const album = 'album' in input ? input.album : await storedAlbum(db, workflowId, input.albumKey, deciding);
  const data = {
    ...(type === 'album.updated' ? { change: updated } : {}),
    album,
    decision,
    ...(input.edit ? { edit: input.edit } : {}),
    ...(withdrawn ? { [withdrawn.change]: { messageId: withdrawn.messageId, withdrawnAt: withdrawn.withdrawnAt } } : {}),
  };
  return { id, workflowId, workspace: album.key.workspace, type, data, recordedAt, whileStored: true };
}
