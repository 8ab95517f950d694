// What the outbound delivery tests share: a database of the test's own (the environment endpoint and the
// engines' passes see every endpoint of their database), a receiver that verifies every request, engines on
// pools of their own, and notifications recorded the way the album wiring records them (in a transaction).
import { generateKey, KeyRing, keyText } from '../../src/common/secret-key.js';
import { recordNotification, type NotificationData, type RecordedNotification } from '../../src/db/deliveries.js';
import type { StoredEndpoint } from '../../src/db/endpoints.js';
import type { Pool, Queryable } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/transaction.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { createDeliveryEngine, endpointGuard, type DeliveryEngine, type DeliveryEngineOptions } from '../../src/delivery/engine.js';
import { addEndpoint, type EndpointDeps, type EndpointInput } from '../../src/delivery/endpoints.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import type { NotificationType } from '../../src/domain/types.js';
import { mediaLinks } from './delivery-engine.js';
import { freshDatabase, testConfig, testLogger, testPool } from './env.js';
import { startWebhookReceiver, type Answering, type WebhookReceiver } from './servers/webhook-receiver.js';

export interface Testbed {
  databaseUrl: string;
  /** ALBUMFLOW_SECRET_KEY of `keys` (for an engine in a process of its own). */
  secretKey: string;
  /** The test's own pool (recording, reading rows). */
  pool: Pool;
  keys: KeyRing;
  receiver: WebhookReceiver;
  deps: EndpointDeps;
  /** An engine on a pool of its own, started; stopped by `close`. */
  startEngine(options?: Partial<DeliveryEngineOptions> & { env?: Record<string, string> }): Promise<DeliveryEngine>;
  /** An endpoint of the workspace pointed at the receiver's endpoint `name`. */
  endpoint(
    workspace: string,
    name: string,
    input?: Partial<EndpointInput>,
    answering?: Answering,
  ): Promise<{ endpoint: StoredEndpoint; secret: string }>;
  /** Records the notification in a transaction of its own, or on `db` (a transaction the test holds open). */
  record(notification: TestNotification, db?: Queryable): Promise<RecordedNotification>;
  close(): Promise<void>;
}

export interface TestNotification {
  workspace: string;
  /** The album (or message) it belongs to: its order key. */
  album: string;
  seq: number;
  type?: NotificationType;
  data?: NotificationData;
}

export const workflowIdOf = (workspace: string, album: string) => `album:${workspace}:whatsapp:acc_1:conv_1:${album}`;
export const notificationIdOf = (n: TestNotification) => `${workflowIdOf(n.workspace, n.album)}/${n.seq}`;

/** Engine settings that make a test fast: a short sweep and lease. */
const fast = { sweepIntervalMs: 100, leaseMs: 2_000 };

export async function deliveryTestbed(env: Record<string, string> = {}): Promise<Testbed> {
  const databaseUrl = await freshDatabase();
  const config = testConfig({ DATABASE_URL: databaseUrl, ...env });
  const pool = testPool(config);
  const key = generateKey();
  const keys = new KeyRing([key]);
  const receiver = await startWebhookReceiver();
  const deps: EndpointDeps = { keys, guard: endpointGuard({ allowPrivateNetworks: true }) };
  const engines: Array<{ engine: DeliveryEngine; pool: Pool }> = [];

  return {
    databaseUrl,
    secretKey: keyText(key),
    pool,
    keys,
    receiver,
    deps,
    async startEngine({ env: engineEnv = {}, ...options } = {}) {
      const engineConfig = testConfig({ DATABASE_URL: databaseUrl, NOTIFY_ALLOW_PRIVATE_NETWORKS: 'true', ...env, ...engineEnv });
      const delivery = deliveryConfig(engineConfig.notify);
      const enginePool = testPool(engineConfig, 4);
      const engine = createDeliveryEngine({
        pool: enginePool,
        keys,
        config: delivery,
        guard: endpointGuard(delivery),
        materialize: withMediaLinks(mediaLinks),
        logger: testLogger(engineConfig),
        ...fast,
        ...options,
      });
      engines.push({ engine, pool: enginePool });
      await engine.start();
      return engine;
    },
    async endpoint(workspace, name, input = {}, answering) {
      const url = receiver.endpoint(name, [], answering);
      const added = await withTransaction(pool, (db) => addEndpoint(db, deps, workspace, { url, ...input }));
      receiver.setSecrets(name, [added.secret]);
      return added;
    },
    record(n, on) {
      const recording = (db: Queryable) =>
        recordNotification(db, {
          id: notificationIdOf(n),
          workflowId: workflowIdOf(n.workspace, n.album),
          workspace: n.workspace,
          type: n.type ?? (n.seq === 1 ? 'album.ready' : 'album.updated'),
          data: n.data ?? { album: { albumId: n.album }, decision: { seq: n.seq } },
          recordedAt: new Date(),
        });
      return on ? recording(on) : withTransaction(pool, recording);
    },
    async close() {
      // First the receiver: an attempt it holds unanswered ends now instead of at its timeout.
      await receiver.close();
      await Promise.all(engines.map(({ engine }) => engine.stop()));
      await Promise.all(engines.map(({ pool: enginePool }) => enginePool.end()));
      await pool.end();
    },
  };
}

/** The ids of the notifications the receiver's endpoint got, in arrival order. */
export function arrivals(receiver: WebhookReceiver, name: string): string[] {
  return receiver.received(name).map((request) => request.body.data.id);
}
