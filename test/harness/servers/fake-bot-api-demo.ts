// What the demo of docs/telegram.md ("Try it without Telegram") serves from the fake Bot API: real
// JPEG photos for the file ids of the example album (examples/telegram-album.json), to a bot whose
// token only the fake knows — and, for any other Updates it is given, a JPEG for every photo (a live
// photo's still too) and an MP4 file for every video (a live photo's too), paid media item by item.
// Shared by the runnable fake (fake-bot-api-main.ts) and the npm start test.

import fs from 'node:fs';
import path from 'node:path';
import { parseUpdate } from '../../../src/platforms/telegram/parse.js';
import { projectRoot } from '../../../src/common/paths.js';
import type { FakeBotApi } from './fake-bot-api.js';
import { jpeg, mp4 } from '../images.js';

/** The demo's bot: a token of BotFather's form that only the fake Bot API accepts. */
export const demoBot = {
  workspace: 'demo',
  name: 'shop',
  id: '7000000001',
  token: '7000000001:FAKE-token-known-only-to-the-fake-Bot-API',
  secretToken: 'fake-bot-api-demo-secret-token',
} as const;

/** The example album: its three Updates in the order Telegram would send them, as `albumflow send --telegram` takes them. */
export const exampleAlbumFile = path.join(projectRoot, 'examples', 'telegram-album.json');

export interface ServedPhoto {
  /** The file of the Update it belongs to. */
  file: string;
  updateId: number;
  fileId: string;
  width: number;
  height: number;
  /** JPEG for a photo (and a live photo's still), MP4 for a video (and a live photo's video). */
  format: 'JPEG' | 'MP4';
  content: Buffer;
}

/** Media albumflow keeps as video: the fake serves an MP4 file for them. */
const videoKinds = new Set(['video', 'animation', 'video_note', 'live_photo']);

/** TELEGRAM_BOTS for albumflow with the demo's bot under `workspace`. */
export function demoTelegramBots(workspace: string = demoBot.workspace): string {
  return JSON.stringify({ [workspace]: { [demoBot.name]: { token: demoBot.token, secretToken: demoBot.secretToken } } });
}

/**
 * Makes the fake serve to the bot `token`, for every file albumflow keeps of each Update in `files` (each
 * holds an Update or a list of them), a file of the size the Update gives, each a different one: a JPEG
 * for a photo or a live photo's still, an MP4 file for a video or a live photo's video.
 */
export async function servePhotos(api: FakeBotApi, token: string, files: readonly string[]): Promise<ServedPhoto[]> {
  api.addBot(token);
  const updates = files.flatMap((file) => {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).map((update) => ({ file, update: update as { update_id: number } }));
  });
  const served: ServedPhoto[] = [];
  for (const { file, update } of updates) {
    const parsed = parseUpdate(demoBot.workspace, token.split(':')[0]!, Buffer.from(JSON.stringify(update)));
    const attachments = parsed.kind === 'child' || parsed.kind === 'edit' ? parsed.child.attachments : [];
    for (const attachment of attachments) {
      const media = attachment.telegramFile;
      if (!media) continue;
      const width = media.width ?? 1280;
      const height = media.height ?? 960;
      const video = attachment.kind !== null && videoKinds.has(attachment.kind);
      const parts = [
        { fileId: media.fileId, format: video ? ('MP4' as const) : ('JPEG' as const) },
        ...(media.still ? [{ fileId: media.still.fileId, format: 'JPEG' as const }] : []),
      ];
      for (const { fileId, format } of parts) {
        // A redelivered Update names a file already served: Telegram has one file per file id.
        if (served.some((photo) => photo.fileId === fileId)) continue;
        const seed = 200 + 47 * served.length;
        const content = format === 'MP4' ? mp4(64 * 1024, seed) : await jpeg(width, height, seed % 360);
        api.addFile(token, fileId, { content, contentType: format === 'MP4' ? 'video/mp4' : 'image/jpeg' });
        served.push({ file, updateId: update.update_id, fileId, width, height, format, content });
      }
    }
  }
  if (served.length === 0) throw new Error(`no Update of ${files.join(', ')} has a photo or another file`);
  return served;
}
