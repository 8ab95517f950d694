import { albumStatusFromDatabase, findAlbum } from '../src/db/status.js';
import type { MessageWorkflowStatus } from '../workflows/album-view.js';
import type { AlbumKey, AlbumStatus, DecisionView, LateItemPolicy, NotificationType } from '../workflows/types.js';
import type { ActivityDeps } from './index.js';
import { createNotifier } from './notify.js';

/** The decision a notification announces; `album.updated` also names the late children and the policy applied. */
export interface NotifiedDecision extends DecisionView {
  lateChildMessageIds?: string[];
  lateItemPolicy?: LateItemPolicy;
}

export type NotifyInput = { workflowId: string; seq: number; decision: NotifiedDecision } & (
  | { type: Exclude<NotificationType, 'message.ready'>; album: AlbumStatus }
  /** An album body too large to pass through Temporal: the activity reads it from PostgreSQL. */
  | { type: Exclude<NotificationType, 'message.ready'>; albumKey: AlbumKey }
  | { type: 'message.ready'; message: MessageWorkflowStatus }
);

/** `<workflowId>/<seq>` for the notification a decision causes, `<workflowId>/<seq>/<type>` for later ones about it. */
export function notificationId(workflowId: string, seq: number, type: NotificationType): string {
  return type === 'album.media_settled' ? `${workflowId}/${seq}/${type}` : `${workflowId}/${seq}`;
}

export function createPublishActivities(deps: ActivityDeps) {
  const { deliverNotification } = createNotifier(deps);

  async function storedAlbum(workflowId: string, key: AlbumKey): Promise<AlbumStatus> {
    const album = await findAlbum(deps.pool, key);
    if (!album) throw new Error(`album ${workflowId} is not stored`);
    return albumStatusFromDatabase(deps.pool, album, key);
  }

  /** Sends one notification under its stable id; a retry or a replay delivers it at most once. */
  async function notify(input: NotifyInput): Promise<{ id: string; outcome: 'delivered' | 'recorded' | 'already' }> {
    const id = notificationId(input.workflowId, input.seq, input.type);
    const payload =
      input.type === 'message.ready'
        ? { id, type: input.type, message: input.message, decision: input.decision }
        : {
            id,
            type: input.type,
            album: 'album' in input ? input.album : await storedAlbum(input.workflowId, input.albumKey),
            decision: input.decision,
          };
    const outcome = await deliverNotification({ id, workflowId: input.workflowId, type: input.type, payload });
    return { id, outcome };
  }

  return { notify };
}
