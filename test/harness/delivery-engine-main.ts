// A delivery engine in a process of its own, for the test that kills one mid-send (kill -9): DATABASE_URL,
// ALBUMFLOW_SECRET_KEY, NOTIFY_* and DELIVERY_* as in production, the engine's times from
// DELIVERY_TEST_TIMEOUT_MS and DELIVERY_TEST_LEASE_MS. Prints a line once it runs.
import { loadConfig } from '../../src/common/config.js';
import { createLogger } from '../../src/common/log.js';
import { KeyRing, parseKeys } from '../../src/common/secret-key.js';
import { connectionConfig, createPool } from '../../src/db/pool.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { createDeliveryEngine } from '../../src/delivery/engine.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { endpointGuard } from '../../src/delivery/engine.js';
import { deliveryEngineReadyLine, mediaLinks } from './delivery.js';

const config = loadConfig(process.env);
const delivery = deliveryConfig(config.notify);
const engine = createDeliveryEngine({
  pool: createPool(connectionConfig(config.databaseUrl), { max: 4 }),
  keys: new KeyRing(parseKeys(process.env.ALBUMFLOW_SECRET_KEY ?? '', 'ALBUMFLOW_SECRET_KEY')),
  config: delivery,
  guard: endpointGuard(delivery),
  materialize: withMediaLinks(mediaLinks),
  logger: createLogger({ level: 'warn', format: 'json', name: 'delivery-engine' }),
  timeoutMs: Number(process.env.DELIVERY_TEST_TIMEOUT_MS),
  leaseMs: Number(process.env.DELIVERY_TEST_LEASE_MS),
  sweepIntervalMs: 100,
});
await engine.start();
console.log(deliveryEngineReadyLine);
