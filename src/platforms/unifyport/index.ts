// UnifyPort's normalized event stream: any chat platform, one HMAC-signed event per message.
import type { Platform } from '../platform.js';
import { unifyportCli } from './cli.js';
import { unifyportRoute } from './route.js';

export const unifyport: Platform = {
  name: 'unifyport',
  // An album's children carry their index (and sometimes the total): ordered by it.
  albumProfile: { maxChildren: null, childOrder: 'index' },
  route: unifyportRoute,
  cli: unifyportCli,
};
