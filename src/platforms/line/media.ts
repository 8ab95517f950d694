// LINE content of a message, from the data API with the access token of the channel the webhook came
// through (404/410: expired; 202: not ready yet, retried).
import type { LineChannel, LineConfig } from '../../common/config.js';
import type { MessageKey } from '../../domain/types.js';
import { refusedMediaApi, type MediaApi } from '../api.js';
import type { PlatformMedia } from '../platform.js';
import { createMessagingApi } from './messaging-api.js';

const apiName = 'the LINE content API';

function channelOf(config: LineConfig, key: MessageKey, name: string): LineChannel | undefined {
  return config.channels.get(key.workspace)?.get(name);
}

export const lineMedia: PlatformMedia = {
  api({ line }, row, key): MediaApi | null {
    const name = row.lineChannel;
    if (name === null) return null;
    const channel = channelOf(line, key, name);
    if (!channel) return refusedMediaApi(apiName, `LINE_CHANNELS["${key.workspace}"] has no channel "${name}"`);
    const { channelAccessToken } = channel;
    const api = createMessagingApi({ apiRoot: line.apiRoot, dataApiRoot: line.dataApiRoot, channelAccessToken });
    return {
      apiName,
      open: (signal) => api.openContent(key.messageId, signal),
      redact: (text) => text.split(channelAccessToken).join('[redacted]'),
    };
  },
};
