// What a notification's data gains at each attempt and each feed read: links that must be fresh when they
// are sent (docs/api.md, "Notifications"), never stored with it.
import type { NotificationData } from '../db/deliveries.js';
import type { NotificationType } from '../domain/types.js';
import type { MediaLinks } from '../media/links.js';

/** Mints what the data carries that must be fresh when it is sent; the engine and the feed call it, the wiring chooses it. */
export type Materialize = (
  data: NotificationData,
  notification: { workspace: string; type: NotificationType },
) => Promise<NotificationData>;

type Json = unknown;

async function linked(value: Json, mint: (sha256: string) => Promise<string>): Promise<Json> {
  if (Array.isArray(value)) return Promise.all(value.map((item) => linked(item, mint)));
  if (typeof value !== 'object' || value === null) return value;
  const entries = await Promise.all(
    Object.entries(value).map(async ([key, child]): Promise<[string, Json]> => {
      if (key !== 'attachments' || !Array.isArray(child)) return [key, await linked(child, mint)];
      return [key, await Promise.all(child.map((attachment: Json) => withMediaUrl(attachment, mint)))];
    }),
  );
  return Object.fromEntries(entries);
}

/** A downloaded attachment (`status` `downloaded`, its `sha256`) with a `media_url` signed now. */
async function withMediaUrl(attachment: Json, mint: (sha256: string) => Promise<string>): Promise<Json> {
  if (typeof attachment !== 'object' || attachment === null) return attachment;
  const { status, sha256 } = attachment as { status?: unknown; sha256?: unknown };
  if (status !== 'downloaded' || typeof sha256 !== 'string') return attachment;
  return { ...attachment, media_url: await mint(sha256) };
}

/**
 * Gives every downloaded attachment of the data, wherever it sits (an album's children, a standalone
 * message), a `media_url` of albumflow's media route signed for the notification's workspace.
 */
export function withMediaLinks(links: MediaLinks): Materialize {
  return async (data, { workspace }) => (await linked(data, (sha256) => links.url(workspace, sha256))) as NotificationData;
}
