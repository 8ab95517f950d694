// The HTTP app on a delivery testbed's database (test/harness/delivery.ts): its routes add endpoints, list
// deliveries and serve the feed, while the testbed records notifications and runs engines. The app seals
// endpoint secrets under the testbed's key, so that the testbed's engines open them.
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/common/config.js';
import { buildApp, type App } from '../../src/process/app.js';
import type { Testbed } from './delivery.js';
import { testClient, testConfig, testLogger } from './env.js';

export interface DeliveryApp {
  app: App;
  config: Config;
  temporal: Client;
  /** `authorization: Bearer <token>`. */
  as(token: string): { authorization: string };
  close(): Promise<void>;
}

/**
 * `tokens`: API_TOKENS; `workspaces`: the workspaces albumflow knows (WORKSPACE_SECRETS); private endpoint
 * addresses (the testbed's receiver) are allowed unless `allowPrivateNetworks` is false.
 */
export async function deliveryApp(
  bed: Testbed,
  options: { tokens: Record<string, string[]>; workspaces: string[]; allowPrivateNetworks?: boolean; env?: Record<string, string> },
): Promise<DeliveryApp> {
  const config = testConfig({
    DATABASE_URL: bed.databaseUrl,
    ALBUMFLOW_SECRET_KEY: bed.secretKey,
    API_TOKENS: JSON.stringify(options.tokens),
    WORKSPACE_SECRETS: JSON.stringify(Object.fromEntries(options.workspaces.map((workspace) => [workspace, ['delivery-app-secret']]))),
    NOTIFY_ALLOW_PRIVATE_NETWORKS: String(options.allowPrivateNetworks ?? true),
    ...options.env,
  });
  const temporal = await testClient(config);
  const app = await buildApp({
    config,
    pool: bed.pool,
    temporal,
    wakeDispatcher: () => undefined,
    logger: testLogger(config),
  });
  await app.ready();
  return {
    app,
    config,
    temporal,
    as: (token) => ({ authorization: `Bearer ${token}` }),
    async close() {
      await app.close();
      await temporal.connection.close();
    },
  };
}
