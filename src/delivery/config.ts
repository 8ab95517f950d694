// Outbound delivery's environment variables (beside NOTIFY_URL and NOTIFY_SECRET, which src/common/config.ts
// reads): validated at start, each error naming its variable.
import envSchema from 'env-schema';
import { Type, type Static } from 'typebox';
import { ConfigError, type Config } from '../common/config.js';
import { defaultSchedule, parseSchedule } from './schedule.js';
import { environmentSecrets } from './wire.js';

const Env = Type.Object({
  DELIVERY_SCHEDULE: Type.Optional(Type.String({ minLength: 1 })),
  DELIVERY_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  NOTIFY_ALLOW_PRIVATE_NETWORKS: Type.Boolean({ default: false }),
});

export const deliveryEnvNames: readonly string[] = Object.keys(Env.properties);

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

export function deliveryConfig(env: NodeJS.ProcessEnv, notify: Config['notify']): DeliveryConfig {
  let raw: Static<typeof Env>;
  try {
    // An empty variable means unset, as src/common/config.ts reads them.
    const data = Object.fromEntries(Object.entries(env).filter(([name, value]) => value !== '' && deliveryEnvNames.includes(name)));
    raw = envSchema<Static<typeof Env>>({ schema: Env, data, env: false, dotenv: false });
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
  try {
    return {
      schedule: raw.DELIVERY_SCHEDULE === undefined ? defaultSchedule : parseSchedule(raw.DELIVERY_SCHEDULE),
      concurrency: raw.DELIVERY_CONCURRENCY,
      allowPrivateNetworks: raw.NOTIFY_ALLOW_PRIVATE_NETWORKS,
      environment: notify.url === undefined ? undefined : { url: notify.url, secrets: environmentSecrets(notify.secret) },
    };
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
}
