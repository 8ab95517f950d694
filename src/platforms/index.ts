// The platforms albumflow receives webhooks from: adding one is a folder beside these and a line here.
import type { Config } from '../common/config.js';
import type { StoredAttachment } from '../db/attachments.js';
import type { AlbumProfile, MessageKey } from '../domain/types.js';
import type { MediaApi } from './api.js';
import { line } from './line/index.js';
import type { Platform } from './platform.js';
import { telegram } from './telegram/index.js';
import { unifyport } from './unifyport/index.js';

export const platforms: readonly Platform[] = [unifyport, telegram, line];

/** The album profile of an album whose first child came from this platform (its `source`). */
export function albumProfileOf(source: string): AlbumProfile {
  const platform = platforms.find(({ name }) => name === source);
  if (!platform) throw new Error(`no platform "${source}" is registered`);
  return platform.albumProfile;
}

/** The platform API that serves an attachment's file, with credentials as configured now; null when no platform serves it. */
export function mediaApiOf(config: Config, attachment: StoredAttachment, key: MessageKey): MediaApi | null {
  for (const { media } of platforms) {
    const api = media?.api(config, attachment, key);
    if (api) return api;
  }
  return null;
}

/** The platform API that serves an attachment's still (a live photo's), as mediaApiOf its file; null when it has none. */
export function stillApiOf(config: Config, attachment: StoredAttachment, key: MessageKey): MediaApi | null {
  for (const { media } of platforms) {
    const api = media?.still?.(config, attachment, key);
    if (api) return api;
  }
  return null;
}
