// What a notification is: its stable id, and its body with a signed `media_url` on each downloaded file.
import { albumStatusFromDatabase, findAlbum } from '../db/status.js';
import type { Pool } from '../db/pool.js';
import type { AlbumKey, AlbumView, AttachmentView, ChildEdit, ChildView, ChildWithdrawal, NotificationType } from '../domain/types.js';
import type { MediaLinks } from '../media/links.js';
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

/** An attachment as a notification carries it: with `media_url` once its file is downloaded. */
type NotifiedAttachment = AttachmentView & { media_url?: string };

/** The child with a signed `media_url` on each downloaded attachment (the receiver fetches the file with it, no token). */
async function withMediaUrls(links: MediaLinks, workspace: string, child: ChildView): Promise<ChildView> {
  const attachments = await Promise.all(
    child.attachments.map(async (attachment): Promise<NotifiedAttachment> =>
      attachment.status === 'downloaded' && attachment.sha256
        ? { ...attachment, media_url: await links.url(workspace, attachment.sha256) }
        : attachment,
    ),
  );
  return { ...child, attachments };
}

/** The album as PostgreSQL records it, for a notification whose input names the album without its view. */
async function storedAlbum(pool: Pool, workflowId: string, key: AlbumKey): Promise<AlbumView> {
  const album = await findAlbum(pool, key);
  if (!album) throw new Error(`album ${workflowId} is not stored`);
  return albumStatusFromDatabase(pool, album, key, albumProfileOf(album.source).childOrder);
}

async function albumWithMediaUrls(links: MediaLinks, album: AlbumView): Promise<AlbumView> {
  const children = await Promise.all(album.children.map((child) => withMediaUrls(links, album.key.workspace, child)));
  return { ...album, children };
}

/** The notification's id and its body, as sent (links signed now). */
export async function notificationBody(pool: Pool, links: MediaLinks, input: NotifyInput): Promise<{ id: string; body: string }> {
  const id = notificationId(input.workflowId, input.seq, input.type, input.notice, input.edit, input.unsent);
  // A withdrawal is told under its platform's word (LINE: unsent, Telegram: deleted), the child under the same key.
  const withdrawn = input.unsent && {
    change: input.unsent.change ?? 'unsent',
    messageId: input.unsent.messageId,
    withdrawnAt: input.unsent.withdrawnAt,
  };
  const updated = input.edit ? 'edited' : (withdrawn?.change ?? 'late_item');
  const change = input.type === 'album.updated' ? { change: updated } : {};
  const payload =
    input.type === 'message.ready'
      ? {
          id,
          type: input.type,
          message: {
            ...input.message,
            message: input.message.message && (await withMediaUrls(links, input.message.key.workspace, input.message.message)),
          },
          decision: input.decision,
        }
      : {
          id,
          type: input.type,
          ...change,
          album: await albumWithMediaUrls(
            links,
            'album' in input ? input.album : await storedAlbum(pool, input.workflowId, input.albumKey),
          ),
          decision: input.decision,
          ...(input.edit ? { edit: input.edit } : {}),
          ...(withdrawn ? { [withdrawn.change]: { messageId: withdrawn.messageId, withdrawnAt: withdrawn.withdrawnAt } } : {}),
        };
  return { id, body: JSON.stringify(payload) };
}
