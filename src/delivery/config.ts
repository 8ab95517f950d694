// What outbound delivery's settings (NOTIFY_*, DELIVERY_*, read by src/common/config.ts) mean: the schedule's
// delays and the environment endpoint's secrets, checked at start, each error naming its variable.
import { ConfigError, type NotifyConfig } from '../common/config.js';
import { defaultSchedule, parseSchedule } from './schedule.js';
import { environmentSecrets } from './wire.js';

/** NOTIFY_URL's endpoint: every workspace's notifications, signed with NOTIFY_SECRET's secrets. */
export interface EnvironmentEndpoint {
  url: string;
  secrets: string[];
}

export interface DeliveryConfig {
  /** The delay before each attempt (ms), the first 0. */
  schedule: readonly number[];
  /** Requests in flight at once per endpoint (across processes: one process sends to an endpoint at a time). */
  concurrency: number;
  /** Endpoints added through the API may be private, loopback or link-local addresses (tests, private setups). */
  allowPrivateNetworks: boolean;
  /** Unset without NOTIFY_URL. */
  environment: EnvironmentEndpoint | undefined;
}

export function deliveryConfig(notify: NotifyConfig): DeliveryConfig {
  try {
    return {
      schedule: notify.schedule === undefined ? defaultSchedule : parseSchedule(notify.schedule),
      concurrency: notify.concurrency,
      allowPrivateNetworks: notify.allowPrivateNetworks,
      environment: notify.url === undefined ? undefined : { url: notify.url, secrets: environmentSecrets(notify.secret) },
    };
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
}
