// The album page's model: the status body (docs/api.md, "Status"; read from PostgreSQL) with what the
// page shows beside it — file names, which decision brought each child, links. Pure: no I/O.
import type { AttachmentDetails } from '../db/console.js';
import type { DeliveryState, DeliveryView } from '../db/deliveries.js';
import type { StoredEndpoint } from '../db/endpoints.js';
import type { NotificationType } from '../domain/types.js';
import type { AlbumView, AttachmentStatus, AttachmentView, DecisionTrigger, ReviewReason } from '../domain/types.js';
import { consolePaths, temporalWorkflowUrl } from './paths.js';

/** A caption a child had until an edit replaced it (Telegram's `edited_*` updates, docs/telegram.md). */
export interface CaptionEdit {
  caption: string | null;
  /** When the edit that replaced it was made. */
  editedAt: string;
}

export interface AttachmentModel {
  messageId: string;
  position: number;
  status: AttachmentStatus;
  error: string | null;
  fileName: string | null;
  contentType: string | null;
  bytes: number | null;
  video: boolean;
  /** The file and its thumbnail (a live photo's: its still's); null until it is downloaded. */
  mediaUrl: string | null;
  thumbnailUrl: string | null;
}

export interface ChildModel {
  messageId: string;
  index: string;
  total: string;
  caption: string | null;
  sentAt: string | null;
  receivedAt: string;
  /** The trigger of the first decision that included the child; null while none did. */
  decidedBy: DecisionTrigger | null;
  late: boolean;
  attachments: AttachmentModel[];
  edits: readonly CaptionEdit[];
  /** When it was withdrawn (LINE's unsend, Telegram's deleted business messages); null while it is not. */
  withdrawnAt: string | null;
}

export interface DecisionModel {
  seq: number;
  trigger: DecisionTrigger;
  decidedAt: string;
  childMessageIds: string[];
  /** Children this decision included that no earlier one did. */
  newMessageIds: string[];
}

/** Where one notification of the album went: one endpoint's delivery of it. */
export interface DeliveryModel {
  notificationId: string;
  type: NotificationType;
  /** What the page calls the endpoint (its URL, or the environment endpoint's name). */
  endpoint: string;
  /** The endpoint's page. */
  endpointUrl: string;
  state: DeliveryState;
  attempts: number;
  /** The last attempt: when, and what came of it. */
  last: { at: string; outcome: string } | null;
}

export interface AlbumPageModel {
  album: AlbumView;
  attachments: AttachmentModel[];
  children: ChildModel[];
  decisions: DecisionModel[];
  /** How the page keeps itself current; null once the album is closed. */
  live: { versionUrl: string; version: string; pollMs: number } | null;
  actions: { retryDownloads: string; resolveReview: string; erase: string };
  temporalUrl: string | null;
  /** Each notification's deliveries, in the order they were recorded. */
  deliveries: DeliveryModel[];
}

export interface AlbumPageInput {
  album: AlbumView;
  details: readonly AttachmentDetails[];
  version: string;
  pollMs: number;
  temporalUi: { url: string | undefined; namespace: string };
  /**
   * The deliveries of the album's notifications the viewer may see (its workspace's endpoints', and the
   * environment endpoint's for a `*` token), with their endpoints.
   */
  deliveries?: { views: readonly DeliveryView[]; endpoints: ReadonlyMap<string, StoredEndpoint> };
}

/** An index or total as received: numbers as they are, anything else as its JSON. */
function asReceived(value: unknown): string {
  if (value === null || value === undefined) return '—';
  return typeof value === 'number' ? String(value) : JSON.stringify(value);
}

function attachmentModel(
  workspace: string,
  messageId: string,
  attachment: AttachmentView,
  details: AttachmentDetails | undefined,
): AttachmentModel {
  const downloaded = attachment.status === 'downloaded' && attachment.sha256 !== null;
  const contentType = attachment.contentType ?? details?.declaredMimeType ?? null;
  // A live photo's still is its poster: a picture of the video that the thumbnailer decodes.
  const thumbnailOf = details?.stillSha256 ?? attachment.sha256;
  return {
    messageId,
    position: attachment.position,
    status: attachment.status,
    error: attachment.error,
    fileName: details?.fileName ?? null,
    contentType,
    bytes: attachment.bytes,
    video: contentType !== null ? contentType.toLowerCase().startsWith('video/') : details?.kind === 'video',
    mediaUrl: downloaded ? consolePaths.media(workspace, attachment.sha256!) : null,
    thumbnailUrl: downloaded ? consolePaths.thumbnail(workspace, thumbnailOf!) : null,
  };
}

function deliveryModel(view: DeliveryView, endpoint: StoredEndpoint | undefined): DeliveryModel {
  const last = view.history.at(-1);
  return {
    notificationId: view.notificationId,
    type: view.type,
    endpoint:
      endpoint === undefined ? view.endpointId : endpoint.workspace === null ? 'the environment endpoint (NOTIFY_URL)' : endpoint.url,
    endpointUrl: consolePaths.endpoint(view.endpointId),
    state: view.state,
    attempts: view.attempts,
    last:
      last === undefined
        ? null
        : { at: last.at.toISOString(), outcome: last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no answer') },
  };
}

export function albumPageModel(input: AlbumPageInput): AlbumPageModel {
  const { album } = input;
  const detailsByAttachment = new Map(input.details.map((d) => [`${d.messageId}\u0000${d.position}`, d]));
  const decidedBy = new Map<string, DecisionTrigger>();
  const decisions = album.decisions.map((decision): DecisionModel => {
    const newMessageIds = decision.childMessageIds.filter((id) => !decidedBy.has(id));
    for (const id of newMessageIds) decidedBy.set(id, decision.trigger);
    return { ...decision, newMessageIds };
  });
  const children = album.children.map((child): ChildModel => {
    const trigger = decidedBy.get(child.messageId) ?? null;
    return {
      messageId: child.messageId,
      index: asReceived(child.index),
      total: asReceived(child.total),
      caption: child.caption,
      sentAt: child.sentAt,
      receivedAt: child.receivedAt,
      decidedBy: trigger,
      late: trigger === 'late_item',
      attachments: child.attachments.map((attachment) =>
        attachmentModel(
          album.key.workspace,
          child.messageId,
          attachment,
          detailsByAttachment.get(`${child.messageId}\u0000${attachment.position}`),
        ),
      ),
      edits: child.history.map((earlier) => ({ caption: earlier.caption, editedAt: earlier.replacedAt })),
      withdrawnAt: child.withdrawnAt ?? null,
    };
  });
  return {
    album,
    attachments: children.flatMap((child) => child.attachments),
    children,
    decisions,
    live:
      album.state === 'closed' ? null : { versionUrl: consolePaths.albumVersion(album.key), version: input.version, pollMs: input.pollMs },
    actions: {
      retryDownloads: consolePaths.action(album.key, 'retry-downloads'),
      resolveReview: consolePaths.action(album.key, 'resolve-review'),
      erase: consolePaths.erase(album.key),
    },
    temporalUrl:
      input.temporalUi.url === undefined ? null : temporalWorkflowUrl(input.temporalUi.url, input.temporalUi.namespace, album.workflowId),
    deliveries: (input.deliveries?.views ?? []).map((view) => deliveryModel(view, input.deliveries?.endpoints.get(view.endpointId))),
  };
}

export const reviewReasonText: Record<ReviewReason, string> = {
  total_conflict: 'children disagree on the album’s total',
  duplicate_index: 'two children carry the same index',
  invalid_metadata: 'an index or total is not a non-negative integer',
  late_item: 'a child arrived after the album was decided',
};

export const triggerText: Record<DecisionTrigger, string> = {
  expected_count_reached: 'expected count reached',
  quiet_period: 'quiet period',
  max_wait: 'maximum wait',
  late_item: 'late item',
  album_full: 'album full (Telegram’s 10 items)',
  standalone: 'standalone message',
};
