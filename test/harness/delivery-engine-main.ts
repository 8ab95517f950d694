// A delivery engine in a process of its own (started by test/harness/delivery-engine.ts): DATABASE_URL,
// ALBUMFLOW_SECRET_KEY, NOTIFY_* and DELIVERY_* as in production, the engine's times from
// DELIVERY_TEST_TIMEOUT_MS, DELIVERY_TEST_LEASE_MS and DELIVERY_TEST_SWEEP_MS (each unset: the engine's
// default). Prints a line once it runs; on SIGTERM it stops the engine and exits (so that --cpu-prof writes
// its profile).
import { loadConfig } from '../../src/common/config.js';
import { createLogger } from '../../src/common/log.js';
import { KeyRing, parseKeys } from '../../src/common/secret-key.js';
import { connectionConfig, createPool } from '../../src/db/pool.js';
import { deliveryConfig } from '../../src/delivery/config.js';
import { createDeliveryEngine, endpointGuard } from '../../src/delivery/engine.js';
import { withMediaLinks } from '../../src/delivery/materialize.js';
import { deliveryEngineReadyLine, mediaLinks } from './delivery-engine.js';

const milliseconds = (name: string): number | undefined => (process.env[name] ? Number(process.env[name]) : undefined);
const config = loadConfig(process.env);
const delivery = deliveryConfig(config.notify);
const pool = createPool(connectionConfig(config.databaseUrl), { max: 4 });
const engine = createDeliveryEngine({
  pool,
  keys: new KeyRing(parseKeys(process.env.ALBUMFLOW_SECRET_KEY ?? '', 'ALBUMFLOW_SECRET_KEY')),
  config: delivery,
  guard: endpointGuard(delivery),
  materialize: withMediaLinks(mediaLinks),
  logger: createLogger({ level: 'warn', format: 'json', name: 'delivery-engine' }),
  timeoutMs: milliseconds('DELIVERY_TEST_TIMEOUT_MS'),
  leaseMs: milliseconds('DELIVERY_TEST_LEASE_MS'),
  sweepIntervalMs: milliseconds('DELIVERY_TEST_SWEEP_MS'),
});
process.once('SIGTERM', () => {
  void engine
    .stop()
    .then(() => pool.end())
    .finally(() => process.exit(0));
});
await engine.start();
console.log(deliveryEngineReadyLine);
