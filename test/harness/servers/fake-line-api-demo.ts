// What the demo of docs/line.md ("Try it without LINE") serves from the fake LINE API: a real JPEG for
// the message id of each image of the example image set (examples/line-image-set.json), to a channel
// whose access token only the fake knows. Shared by the runnable fake (fake-line-api-main.ts) and the
// npm start test.

import path from 'node:path';
import { parseLineWebhook } from '../../../src/platforms/line/parse.js';
import { projectRoot } from '../../../src/common/paths.js';
import { lineBodies } from '../events.js';
import { jpeg } from '../images.js';
import type { FakeLineApi } from './fake-line-api.js';

/** The demo's channel: a secret and an access token of LINE's forms that only the fake knows. */
export const demoChannel = {
  workspace: 'demo',
  name: 'shop',
  channelSecret: 'fa4e0000000000000000000000000000',
  channelAccessToken: 'FAKE-line-channel-access-token-known-only-to-the-fake-LINE-API',
} as const;

/** The example image set: four images in a group, in three requests (shuffled, two in the first), as `albumflow send --line` takes them. */
export const exampleImageSetFile = path.join(projectRoot, 'examples', 'line-image-set.json');

export interface ServedImage {
  file: string;
  messageId: string;
  content: Buffer;
}

/** LINE_CHANNELS for albumflow with the demo's channel under `workspace`. */
export function demoLineChannels(workspace: string = demoChannel.workspace): string {
  const { channelSecret, channelAccessToken } = demoChannel;
  return JSON.stringify({ [workspace]: { [demoChannel.name]: { channelSecret, channelAccessToken } } });
}

/** Makes the fake serve, for each LINE content message of the bodies in `files`, a JPEG (each a different picture) to the demo's channel. */
export async function serveImages(api: FakeLineApi, files: readonly string[]): Promise<ServedImage[]> {
  api.addChannel(demoChannel.channelAccessToken);
  const served: ServedImage[] = [];
  for (const file of files) {
    for (const body of lineBodies(file)) {
      const parsed = parseLineWebhook(demoChannel.workspace, demoChannel.name, Buffer.from(JSON.stringify(body)));
      if (parsed.kind !== 'events') continue;
      for (const event of parsed.events) {
        if (event.kind !== 'child' || event.child.attachments[0]?.lineChannel == null) continue;
        const messageId = event.child.key.messageId;
        // A redelivered event names a message already served: LINE has one content per message.
        if (served.some((image) => image.messageId === messageId)) continue;
        const content = await jpeg(1280, 960, (20 + 53 * served.length) % 360);
        api.addContent(demoChannel.channelAccessToken, messageId, { content, contentType: 'image/jpeg' });
        served.push({ file, messageId, content });
      }
    }
  }
  if (served.length === 0) throw new Error(`no event of ${files.join(', ')} has LINE content`);
  return served;
}
