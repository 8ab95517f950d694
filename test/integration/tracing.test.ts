import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../harness/albums.js';
import { albumEvent, unifyportHeaders } from '../harness/events.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../harness/servers/otlp.js';
import { pickPort } from '../../src/embedded/ports.js';
import { projectRoot } from '../../src/common/paths.js';
import { startProcessStack, type ProcessStack } from '../harness/stack.js';
import { unique } from '../harness/random.js';

const webhookSpan = 'POST /webhooks/unifyport/:workspace';
const photoBytes = 4096;

/** The spans joined by parent and link edges: the ids of each connected part's spans. */
function connectedParts(spans: ReceivedSpan[]): Map<string, string> {
  const root = new Map<string, string>();
  const find = (id: string): string => {
    let at = id;
    while (root.has(at) && root.get(at) !== at) at = root.get(at)!;
    root.set(id, at);
    return at;
  };
  const join = (a: string, b: string) => root.set(find(a), find(b));
  for (const span of spans) {
    if (!root.has(span.spanId)) root.set(span.spanId, span.spanId);
    if (span.parentSpanId) join(span.spanId, span.parentSpanId);
    for (const link of span.links) join(span.spanId, link.spanId);
  }
  return new Map(spans.map((span) => [span.spanId, find(span.spanId)]));
}

// Tracing on (OTLP/HTTP, JSON) in an ingress and a worker process: one album of three photos is followed from
// its three webhook requests to its album.ready notification.
describe('tracing a 3-photo album from its webhooks to album.ready', () => {
  let receiver: OtlpReceiver;
  let stack: ProcessStack;
  let workerMetricsPort: number;
  const caption = `caption ${unique('secret-looking')}`;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    workerMetricsPort = await pickPort();
    stack = await startProcessStack({
      temporal: 'dev-server',
      ingresses: 1,
      workers: 1,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        LOG_LEVEL: 'info',
        WORKER_METRICS_PORT: String(workerMetricsPort),
      },
      media: { bytes: photoBytes, durationMs: () => 0 },
      notifyDelayMs: () => 0,
    });
  }, 240_000);

  afterAll(async () => {
    await stack?.teardown();
    await receiver?.close();
  }, 120_000);

  it('forms one connected picture, and the notification names its trace', { timeout: 120_000 }, async () => {
    const albumId = unique('alb');
    const answers = await Promise.all(
      [0, 1, 2].map(async (index) => {
        const event = albumEvent({
          albumId,
          messageId: `${albumId}-m${index}`,
          index,
          total: 3,
          text: caption,
          attachments: [{ type: 'image', mime_type: 'image/jpeg', url: stack.media.url(`/${albumId}-${index}.jpg`) }],
        });
        const body = JSON.stringify(event);
        const response = await fetch(`${stack.ingressUrls[0]}/webhooks/unifyport/${stack.workspace}`, {
          method: 'POST',
          headers: unifyportHeaders(stack.secret, body),
          body,
        });
        return response.status;
      }),
    );
    expect(answers).toEqual([202, 202, 202]);

    const named = (name: string) => receiver.spans.filter((span) => span.name === name);
    // The workflow's run span ends when the album closes (LATE_WINDOW_MS after its decision).
    await eventually(() => {
      expect(stack.receiver.deliveries.map((d) => d.type)).toContain('album.ready');
      expect(named('RunWorkflow:albumWorkflow')).toHaveLength(1);
      expect(named('albumflow.notify').length).toBeGreaterThanOrEqual(1);
      expect(named('albumflow.download')).toHaveLength(3);
    }, 90_000);

    const webhooks = named(webhookSpan);
    expect(webhooks).toHaveLength(3);
    for (const span of webhooks) {
      expect(span.parentSpanId).toBeUndefined();
      expect(span.roles).toBe('ingress,dispatcher');
      expect(span.attributes).toMatchObject({
        'http.route': '/webhooks/unifyport/:workspace',
        'http.response.status_code': 202,
        'albumflow.workspace': stack.workspace,
        'albumflow.outcome': 'accepted',
      });
    }
    const webhookIds = new Set(webhooks.map((span) => span.spanId));

    const batches = named('albumflow.ingest.batch');
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(new Set(batches.flatMap((span) => span.links.map((link) => link.spanId)))).toEqual(webhookIds);

    const signals = named('albumflow.signal');
    expect(signals.length).toBeGreaterThanOrEqual(1);
    expect(new Set(signals.flatMap((span) => span.links.map((link) => link.spanId)))).toEqual(webhookIds);

    const workflowSpans = receiver.spans.filter((span) => /^(RunWorkflow|HandleSignal):/.test(span.name));
    expect(workflowSpans.length).toBeGreaterThanOrEqual(signals.length);

    const downloads = named('albumflow.download');
    expect(downloads.map((span) => [span.attributes['albumflow.download.outcome'], span.attributes['albumflow.download.bytes']])).toEqual([
      ['downloaded', photoBytes],
      ['downloaded', photoBytes],
      ['downloaded', photoBytes],
    ]);
    const records = named('albumflow.decision.record');
    expect(records).toHaveLength(1);
    expect(new Set(records[0]!.links.map((link) => link.spanId))).toEqual(webhookIds);
    expect(records[0]!.attributes).toMatchObject({
      'albumflow.decision.trigger': 'expected_count_reached',
      'albumflow.decision.children': 3,
    });
    const ready = named('albumflow.notify').filter((span) => span.attributes['albumflow.notification.type'] === 'album.ready');
    expect(ready).toHaveLength(1);

    // One connected picture: every span above reaches every other through parents and links.
    const parts = connectedParts(receiver.spans);
    const picture = [...webhooks, ...batches, ...signals, ...workflowSpans, ...downloads, ...records, ...ready];
    expect(new Set(picture.map((span) => parts.get(span.spanId))).size).toBe(1);

    // The notification carries its span's trace context: the receiver continues that trace.
    const notification = stack.receiver.requests.find((request) => request.body.toString().includes('"album.ready"'))!;
    expect(notification.headers.traceparent).toBe(`00-${ready[0]!.traceId}-${ready[0]!.spanId}-01`);
    expect(signals.map((span) => span.traceId)).toContain(ready[0]!.traceId);

    // A log line written inside a span carries its ids.
    const workerLog = fs.readFileSync(path.join(stack.dir, 'logs', 'worker-1.log'), 'utf8');
    const recorded = workerLog
      .split('\n')
      .filter((line) => line.includes('"decision recorded"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(recorded).toEqual([expect.objectContaining({ trace_id: records[0]!.traceId, span_id: records[0]!.spanId })]);

    // Never a caption, a secret or a signature in a span.
    const everything = JSON.stringify(receiver.spans);
    expect(everything).not.toContain(caption);
    expect(everything).not.toContain(stack.secret);
    expect(everything).not.toContain('v1=');
    expect(receiver.refused).toBe(0);
  });

  // Run after the album above, so that the labelled series and the worker's histograms exist.
  it("queries in the Grafana dashboard only metrics the ingress's /metrics and the worker's Temporal metrics export", async () => {
    const token = fs.readFileSync(path.join(stack.dir, 'data', 'admin-token'), 'utf8').trim();
    const ingress = await fetch(`${stack.ingressUrls[0]}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(ingress.status).toBe(200);
    const worker = await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`);
    expect(worker.status).toBe(200);
    const exported = new Set(
      `${await ingress.text()}\n${await worker.text()}`
        .split('\n')
        .flatMap((line) => /^(?:# (?:HELP|TYPE) )?([a-zA-Z_:][\w:]*)/.exec(line)?.[1] ?? []),
    );
    const dashboard = JSON.parse(fs.readFileSync(path.join(projectRoot, 'deploy/grafana/albumflow.json'), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    const promqlWords = new Set([
      'sum',
      'by',
      'rate',
      'increase',
      'histogram_quantile',
      'max',
      'le',
      'route',
      'status_code',
      'outcome',
      'trigger',
      'type',
      'worker_type',
    ]);
    const queried = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap(({ expr }) =>
        [
          ...expr
            .replace(/"[^"]*"/g, '')
            .replace(/\[[^\]]*\]/g, '')
            .matchAll(/[a-zA-Z_:][\w:]*/g),
        ]
          .map((match) => match[0])
          .filter((word) => !promqlWords.has(word))
          .map((metric) => ({ panel: panel.title, metric })),
      ),
    );
    expect(queried.length).toBeGreaterThanOrEqual(dashboard.panels.length);
    expect(queried.filter(({ metric }) => !exported.has(metric))).toEqual([]);
  });
});
