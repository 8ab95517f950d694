// A delivery engine in a process of its own (test/harness/delivery-engine-main.ts), for the test that kills
// one mid-send and for the bench's delivery phase: its environment, its readiness line, and the media links
// it and the tests' engines mint. Nothing here imports vitest, so the bench may use it.
import { createMediaLinks } from '../../src/media/links.js';
import { fixedLinkKeys, testLinkKey } from './link-keys.js';
import { NodeProcess } from './processes.js';

/** What test/harness/delivery-engine-main.ts prints once its engine runs. */
export const deliveryEngineReadyLine = 'delivery engine running';

export const mediaLinks = createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: 3600, keys: fixedLinkKeys(testLinkKey(7)) });

export interface DeliveryEngineProcessOptions {
  name: string;
  /** The environment it starts from (the variables below are set on top). */
  env: NodeJS.ProcessEnv;
  databaseUrl: string;
  /** ALBUMFLOW_SECRET_KEY: the key the endpoints' secrets were sealed under. */
  secretKey: string;
  /** The engine's times; unset, the engine's defaults (as in production). */
  timeoutMs?: number;
  leaseMs?: number;
  sweepIntervalMs?: number;
  /** Node's own flags (--cpu-prof, …). */
  nodeArgs?: string[];
  logFile: string;
  detached?: boolean;
}

/** The engine's process, not started yet; NOTIFY_* and DELIVERY_* of `env` configure it as in production. */
export function deliveryEngineProcess(options: DeliveryEngineProcessOptions): NodeProcess {
  const times = {
    DELIVERY_TEST_TIMEOUT_MS: options.timeoutMs,
    DELIVERY_TEST_LEASE_MS: options.leaseMs,
    DELIVERY_TEST_SWEEP_MS: options.sweepIntervalMs,
  };
  return new NodeProcess({
    name: options.name,
    script: 'test/harness/delivery-engine-main.ts',
    nodeArgs: options.nodeArgs ?? [],
    env: {
      ...options.env,
      DATABASE_URL: options.databaseUrl,
      ALBUMFLOW_SECRET_KEY: options.secretKey,
      ...Object.fromEntries(Object.entries(times).flatMap(([name, ms]) => (ms === undefined ? [] : [[name, String(ms)]]))),
    },
    ready: new RegExp(deliveryEngineReadyLine),
    logFile: options.logFile,
    detached: options.detached ?? false,
  });
}
