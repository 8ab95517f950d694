// LINE content of a message, from the data API with the access token of the channel the webhook came
// through (404/410: expired; 202: not ready yet, retried).
import type { LineChannel, LineConfig } from '../../src/common/config.js';
import type { MessageKey } from '../../src/domain/types.js';
import { createMessagingApi } from '../../src/line/messaging-api.js';
import type { ApiFetch } from './api.js';
import { PermanentDownloadError } from './errors.js';

function channelOf(config: LineConfig, key: MessageKey, name: string): LineChannel {
  const channel = config.channels.get(key.workspace)?.get(name);
  if (!channel) throw new PermanentDownloadError('failed', `LINE_CHANNELS["${key.workspace}"] has no channel "${name}"`);
  return channel;
}

export function lineContent(config: LineConfig, key: MessageKey, channelName: string): ApiFetch {
  const { channelAccessToken } = channelOf(config, key, channelName);
  const api = createMessagingApi({ apiRoot: config.apiRoot, dataApiRoot: config.dataApiRoot, channelAccessToken });
  return {
    apiName: 'the LINE content API',
    async open(signal) {
      const opened = await api.openContent(key.messageId, signal);
      if (opened.status === 'expired') throw new PermanentDownloadError('expired', opened.reason);
      return { body: opened.stream, contentLength: opened.contentLength, contentType: opened.contentType };
    },
    redact: (text) => text.split(channelAccessToken).join('[redacted]'),
  };
}
