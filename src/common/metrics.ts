import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process; every albumflow metric is defined here. */
export const registry = new Registry();
// prom-client's process and Node.js metrics keep their standard names (process_cpu_user_seconds_total,
// nodejs_eventloop_lag_seconds, …), which the usual Node.js dashboards query; albumflow's own carry its prefix.
collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new Histogram({
  name: 'albumflow_http_request_duration_seconds',
  help: 'HTTP requests answered, by method, route pattern and status code',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const webhooksTotal = new Counter({
  name: 'albumflow_webhooks_total',
  help: 'Webhook requests answered, by HTTP status code and outcome',
  labelNames: ['status', 'outcome'] as const,
  registers: [registry],
});

export const signatureFailuresTotal = new Counter({
  name: 'albumflow_signature_failures_total',
  help: 'Webhook requests refused for their signature or timestamp (UnifyPort) or their secret token (Telegram), by the error code answered',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const tenantReloadsTotal = new Counter({
  name: 'albumflow_tenant_reloads_total',
  help: 'Reads of the tenant tables, by what asked: a change (its notification, or made here), the periodic backstop, or lookups that missed',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const ingestBatchSize = new Histogram({
  name: 'albumflow_ingest_batch_size',
  help: 'Webhook deliveries written in one group-commit transaction',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
  registers: [registry],
});

export const outboxDepth = new Gauge({
  name: 'albumflow_outbox_depth',
  help: 'Children committed but not yet accepted by Temporal',
  registers: [registry],
});

export const outboxOldestAgeSeconds = new Gauge({
  name: 'albumflow_outbox_oldest_age_seconds',
  help: 'Age of the oldest outbox row, 0 when empty',
  registers: [registry],
});

export const albumStatusViewsTotal = new Counter({
  name: 'albumflow_album_status_views_total',
  help: 'Album status bodies answered, by where they came from: workflow (its status query), cached (the answer of its last query, its history unchanged since) or database',
  labelNames: ['source'] as const,
  registers: [registry],
});

export const signalsSentTotal = new Counter({
  name: 'albumflow_signals_sent_total',
  help: 'signalWithStart calls Temporal accepted',
  registers: [registry],
});

export const signalFailuresTotal = new Counter({
  name: 'albumflow_signal_failures_total',
  help: 'signalWithStart calls that failed and will be retried',
  registers: [registry],
});

export const childrenSignalledTotal = new Counter({
  name: 'albumflow_children_signalled_total',
  help: 'Children delivered to workflows (a child may be delivered again after a failure)',
  registers: [registry],
});

export const childrenPerSignal = new Histogram({
  name: 'albumflow_children_per_signal',
  help: 'Children carried by one signalWithStart',
  buckets: [1, 2, 3, 5, 10, 20, 50, 100, 200, 500],
  registers: [registry],
});

export const decisionsTotal = new Counter({
  name: 'albumflow_decisions_total',
  help: 'Album decisions recorded, by trigger',
  labelNames: ['trigger'] as const,
  registers: [registry],
});

export const downloadsTotal = new Counter({
  name: 'albumflow_downloads_total',
  help: 'Attachment downloads finished, by outcome',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const downloadedBytesTotal = new Counter({
  name: 'albumflow_downloaded_bytes_total',
  help: 'Bytes of the attachments downloaded',
  registers: [registry],
});

export const reviewQueue = new Gauge({
  name: 'albumflow_review_queue',
  help: 'Albums flagged for review and not resolved, counted at each scrape',
  registers: [registry],
});

export const notificationsTotal = new Counter({
  name: 'albumflow_notifications_total',
  help: 'Notifications recorded for delivery, by type and outcome (recorded, or already by an earlier attempt)',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const workspaceRows = new Gauge({
  name: 'albumflow_workspace_rows',
  help: 'Rows a workspace keeps, by table (albums, messages, attachments, events, notifications, quarantine); read at a scrape, at most every 30 s',
  labelNames: ['workspace', 'table'] as const,
  registers: [registry],
});

export const workspaceMediaObjects = new Gauge({
  name: 'albumflow_workspace_media_objects',
  help: 'Distinct downloaded files a workspace refers to (one shared by several of its attachments counts once); read at a scrape, at most every 30 s',
  labelNames: ['workspace'] as const,
  registers: [registry],
});

export const workspaceMediaBytes = new Gauge({
  name: 'albumflow_workspace_media_bytes',
  help: 'Bytes of the distinct downloaded files a workspace refers to, each file once; read at a scrape, at most every 30 s',
  labelNames: ['workspace'] as const,
  registers: [registry],
});

export const mediaDeleteFailures = new Gauge({
  name: 'albumflow_media_delete_failures',
  help: 'Media objects the store did not delete (it refused, or was down), set aside and tried again later; counted at each scrape',
  registers: [registry],
});

/** Sets the workspace gauges to `usage` alone: a workspace no longer in it leaves them (one synchronous step, so no scrape sees them half set). */
export function setWorkspaceUsage(
  usage: ReadonlyArray<{ workspace: string; rows: Readonly<Record<string, number>>; media: { objects: number; bytes: number } }>,
): void {
  workspaceRows.reset();
  workspaceMediaObjects.reset();
  workspaceMediaBytes.reset();
  for (const { workspace, rows, media } of usage) {
    for (const [table, count] of Object.entries(rows)) workspaceRows.set({ workspace, table }, count);
    workspaceMediaObjects.set({ workspace }, media.objects);
    workspaceMediaBytes.set({ workspace }, media.bytes);
  }
}
