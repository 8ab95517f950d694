// Outbound delivery's metrics, in the process's one registry (src/common/metrics.ts). The engine counts
// attempts; the backlog gauges are read from PostgreSQL at a scrape (refreshDeliveryGauges), whichever
// process sends.
import { Counter, Gauge } from 'prom-client';
import { registry } from '../common/metrics.js';
import { deliveryBacklog } from '../db/deliveries.js';
import type { Queryable } from '../db/pool.js';

/** What became of one attempt. */
export type AttemptKind = 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused';

export const deliveryAttemptsTotal = new Counter({
  name: 'albumflow_delivery_attempts_total',
  help: 'Delivery attempts, by outcome: delivered (2xx), http_error (another status), timeout, network_error, refused (the network guard refused the address)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const deliveryBacklogGauge = new Gauge({
  name: 'albumflow_delivery_backlog',
  help: "Deliveries pending or held, per endpoint and its workspace ('*': the environment endpoint, every workspace's)",
  labelNames: ['workspace', 'endpoint'] as const,
  registers: [registry],
});

export const deliveryOldestUndeliveredSeconds = new Gauge({
  name: 'albumflow_delivery_oldest_undelivered_seconds',
  help: 'Age of the oldest delivery pending or held, per endpoint and its workspace; 0 when there is none',
  labelNames: ['workspace', 'endpoint'] as const,
  registers: [registry],
});

/** Reads every endpoint's backlog into the gauges (the /metrics route calls it at each scrape). */
export async function refreshDeliveryGauges(db: Queryable): Promise<void> {
  const backlog = await deliveryBacklog(db);
  deliveryBacklogGauge.reset();
  deliveryOldestUndeliveredSeconds.reset();
  for (const { endpointId, workspace, backlog: count, oldestSeconds } of backlog) {
    const labels = { workspace: workspace ?? '*', endpoint: endpointId };
    deliveryBacklogGauge.set(labels, count);
    deliveryOldestUndeliveredSeconds.set(labels, oldestSeconds);
  }
}
