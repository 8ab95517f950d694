import type { RegisteredChannel } from '../../tenants/registry.js';
import type { AccountKind } from '../webhook-route.js';

/** A LINE channel: its webhook is `/webhooks/line/<workspace>/<channel>`, signed with its channel secret. */
export const channels: AccountKind<RegisteredChannel> = {
  platform: 'line',
  param: 'channel',
  noun: 'channel',
  title: 'LINE channel',
  variable: 'LINE_CHANNELS',
  collection: 'line-channels',
  unknownCode: 'unknown_channel',
  lookup: (tenants, workspace, name) => tenants.lineChannel(workspace, name),
};
