import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../harness/albums.js';
import crypto from 'node:crypto';
import {
  albumEvent,
  editOf,
  fileIdOf,
  lineHeaders,
  lineImageSet,
  lineMessageId,
  recentSeconds,
  serveFiles,
  telegramFixture,
  telegramHeaders,
  unifyportHeaders,
  unsendOf,
  type LineEvent,
} from '../harness/events.js';
import { startFakeBotApi, type FakeBotApi } from '../harness/servers/fake-bot-api.js';
import { startFakeLineApi, type FakeLineApi } from '../harness/servers/fake-line-api.js';
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
  let botApi: FakeBotApi;
  let lineApi: FakeLineApi;
  const caption = `caption ${unique('secret-looking')}`;
  const botToken = `7000000031:AAH${crypto.randomBytes(16).toString('hex')}`;
  const botSecretToken = `bot-secret-${crypto.randomBytes(8).toString('hex')}`;
  const channelSecret = crypto.randomBytes(16).toString('hex');
  const channelAccessToken = crypto.randomBytes(32).toString('base64url');

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    botApi = await startFakeBotApi();
    lineApi = await startFakeLineApi();
    lineApi.addChannel(channelAccessToken);
    workerMetricsPort = await pickPort();
    stack = await startProcessStack({
      temporal: 'dev-server',
      ingresses: 1,
      workers: 1,
      env: (workspace) => ({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        LOG_LEVEL: 'info',
        WORKER_METRICS_PORT: String(workerMetricsPort),
        TELEGRAM_API_ROOT: botApi.url,
        TELEGRAM_BOTS: JSON.stringify({ [workspace]: { shop: { token: botToken, secretToken: botSecretToken } } }),
        LINE_API_ROOT: lineApi.url,
        LINE_DATA_API_ROOT: lineApi.url,
        LINE_CHANNELS: JSON.stringify({ [workspace]: { oa: { channelSecret, channelAccessToken } } }),
      }),
      media: { bytes: photoBytes, durationMs: () => 0 },
      notifyDelayMs: () => 0,
    });
  }, 240_000);

  afterAll(async () => {
    await stack?.teardown();
    await receiver?.close();
    await botApi?.close();
    await lineApi?.close();
  }, 120_000);

  /** The delivery attempt span a request's `traceparent` names (the request's own span). */
  function deliveryAttemptOf(traceparent: string | string[] | undefined) {
    const [, traceId, spanId] = String(traceparent).split('-');
    return receiver.spans.find((span) => span.name === 'albumflow.delivery' && span.traceId === traceId && span.spanId === spanId);
  }

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
      expect(stack.receiver.deliveries().map((d) => d.type)).toContain('album.ready');
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

    // The notification's delivery continues its span, and carries the attempt's trace context: the receiver continues that trace.
    const notification = stack.receiver.requests().find((request) => request.body.type === 'album.ready')!;
    // Its span ends once the attempt is recorded, after the receiver answered: it is exported a moment later.
    await eventually(() =>
      expect(deliveryAttemptOf(notification.headers.traceparent)).toMatchObject({
        traceId: ready[0]!.traceId,
        parentSpanId: ready[0]!.spanId,
      }),
    );
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

  it(
    "follows a Telegram album, its edit after the decision, and a LINE image set the same way, with neither platform's token in a span",
    { timeout: 120_000 },
    async () => {
      const post = async (route: string, headers: Record<string, string>, body: string) => {
        const response = await fetch(`${stack.ingressUrls[0]}/webhooks/${route}`, { method: 'POST', headers, body });
        expect(response.status).toBe(200);
      };
      const readyBefore = stack.receiver.deliveries().filter((d) => d.type === 'album.ready').length;
      const updates = telegramFixture('photo-album');
      serveFiles(botApi, botToken, updates);
      for (const update of updates) await post(`telegram/${stack.workspace}/shop`, telegramHeaders(botSecretToken), JSON.stringify(update));
      const lineEvents: LineEvent[] = lineImageSet({ setId: unique('set'), count: 2 });
      for (const event of lineEvents)
        lineApi.addContent(channelAccessToken, lineMessageId(event), { content: Buffer.from(`jpeg ${lineMessageId(event)}`) });
      const lineBody = JSON.stringify({ destination: 'Ubot0000000000000000000000000000', events: lineEvents });
      await post(`line/${stack.workspace}/oa`, lineHeaders(channelSecret, lineBody), lineBody);

      const webhookSpans = (route: string) => receiver.spans.filter((span) => span.name === `POST /webhooks/${route}`);
      const telegramRoute = 'telegram/:workspace/:bot';
      await eventually(() => {
        expect(stack.receiver.deliveries().filter((d) => d.type === 'album.ready')).toHaveLength(readyBefore + 2);
        expect(webhookSpans(telegramRoute)).toHaveLength(3);
        expect(webhookSpans('line/:workspace/:channel')).toHaveLength(1);
      }, 90_000);
      // An edit of the album's first photo after its decision: one album.updated, in the edit's own trace.
      const edit = editOf(updates[0]!, 10, (message) => {
        message.caption = 'edited caption';
        message.edit_date = recentSeconds(1790676600);
      });
      await post(`telegram/${stack.workspace}/shop`, telegramHeaders(botSecretToken), JSON.stringify(edit));
      await eventually(() => {
        expect(stack.receiver.deliveries().filter((d) => d.type === 'album.updated')).toHaveLength(1);
        expect(webhookSpans(telegramRoute)).toHaveLength(4);
        expect(
          receiver.spans.filter(
            (span) => span.name === 'albumflow.notify' && span.attributes['albumflow.notification.type'] === 'album.updated',
          ),
        ).toHaveLength(1);
      }, 90_000);

      const telegramSpans = webhookSpans(telegramRoute);
      expect(telegramSpans.map((span) => span.attributes['albumflow.outcome'])).toEqual(['accepted', 'accepted', 'accepted', 'edited']);
      for (const span of telegramSpans)
        expect(span.attributes).toMatchObject({
          'http.response.status_code': 200,
          'albumflow.workspace': stack.workspace,
          'albumflow.telegram.bot': 'shop',
        });
      const [lineSpan] = webhookSpans('line/:workspace/:channel');
      expect(lineSpan!.attributes).toMatchObject({
        'http.response.status_code': 200,
        'albumflow.line.channel': 'oa',
        'albumflow.outcome': 'accepted',
      });

      const parts = connectedParts(receiver.spans);
      const partOf = (span: ReceivedSpan) => parts.get(span.spanId);
      const inPart = (part: string | undefined, name: string) =>
        receiver.spans.filter((span) => span.name === name && partOf(span) === part);
      // The three Telegram photos: one picture from their webhooks to album.ready, with a download each through getFile.
      const telegramPart = partOf(telegramSpans[0]!);
      for (const span of telegramSpans.slice(0, 3)) expect(partOf(span)).toBe(telegramPart);
      const telegramDownloads = inPart(telegramPart, 'albumflow.download');
      expect(telegramDownloads.map((span) => span.attributes['albumflow.download.outcome'])).toEqual([
        'downloaded',
        'downloaded',
        'downloaded',
      ]);
      const readyIn = (part: string | undefined) =>
        inPart(part, 'albumflow.notify').filter((span) => span.attributes['albumflow.notification.type'] === 'album.ready');
      expect(readyIn(telegramPart)).toHaveLength(1);
      // The edit's request, its signal and the album.updated it caused form one picture: the signal and the
      // notification link to the request. (Whether that picture also holds the album's first requests depends
      // on the workflow span the notification's activity was scheduled under: its run's, or the edit signal's.)
      const editSpan = telegramSpans[3]!;
      const linksToEdit = receiver.spans
        .filter((span) => span.links.some((link) => link.spanId === editSpan.spanId))
        .map((span) => span.name);
      expect(linksToEdit.sort()).toEqual(['albumflow.notify', 'albumflow.signal']);
      const updated = receiver.spans.filter(
        (span) => span.name === 'albumflow.notify' && span.attributes['albumflow.notification.type'] === 'album.updated',
      );
      expect(updated).toHaveLength(1);
      const updatedRequest = stack.receiver.requests().find((request) => request.body.type === 'album.updated')!;
      await eventually(() =>
        expect(deliveryAttemptOf(updatedRequest.headers.traceparent)).toMatchObject({
          traceId: updated[0]!.traceId,
          parentSpanId: updated[0]!.spanId,
        }),
      );
      // The LINE set: its one request, two downloads from the content API, one album.ready.
      const linePart = partOf(lineSpan!);
      expect(linePart).not.toBe(telegramPart);
      expect(inPart(linePart, 'albumflow.download').map((span) => span.attributes['albumflow.download.outcome'])).toEqual([
        'downloaded',
        'downloaded',
      ]);
      expect(readyIn(linePart)).toHaveLength(1);
      // An unsend of a LINE image after the decision: its album.updated links to the unsend's request.
      const unsendBody = JSON.stringify({ destination: 'Ubot0000000000000000000000000000', events: [unsendOf(lineEvents[1]!)] });
      await post(`line/${stack.workspace}/oa`, lineHeaders(channelSecret, unsendBody), unsendBody);
      await eventually(() => {
        const spans = webhookSpans('line/:workspace/:channel');
        expect(spans.map((span) => span.attributes['albumflow.outcome'])).toEqual(['accepted', 'unsent']);
        const linked = receiver.spans
          .filter((span) => span.links.some((link) => link.spanId === spans[1]!.spanId))
          .map((span) => span.name);
        expect(linked.sort()).toEqual(['albumflow.notify', 'albumflow.signal']);
      }, 90_000);
      for (const update of updates) expect(botApi.calls('getFile', botToken).some((r) => r.body.includes(fileIdOf(update)))).toBe(true);

      const everything = JSON.stringify(receiver.spans);
      for (const value of [botToken, botSecretToken, channelSecret, channelAccessToken, 'edited caption'])
        expect(everything).not.toContain(value);
      expect(receiver.refused).toBe(0);
    },
  );

  // Run after the album above, so that the labelled series and the worker's histograms exist.
  it("queries in the Grafana dashboard only metrics the ingress's /metrics and the worker's /metrics export", async () => {
    const token = fs.readFileSync(path.join(stack.dir, 'data', 'admin-token'), 'utf8').trim();
    const ingress = await fetch(`${stack.ingressUrls[0]}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(ingress.status).toBe(200);
    const workerUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    // The worker's listener is behind a `*` token, as the ingress's /metrics is.
    expect((await fetch(workerUrl)).status).toBe(401);
    expect((await fetch(workerUrl, { headers: { authorization: 'Bearer not-a-token' } })).status).toBe(401);
    const worker = await fetch(workerUrl, { headers: { authorization: `Bearer ${token}` } });
    expect(worker.status).toBe(200);
    const workerText = await worker.text();
    // The worker's own counters have samples there (the ingress only declares them), beside the Temporal SDK's.
    const samples = (name: string) => workerText.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
    expect(samples('albumflow_downloads_total').some((line) => /outcome="downloaded"\S* [1-9]/.test(line))).toBe(true);
    expect(samples('albumflow_decisions_total').length).toBeGreaterThan(0);
    expect(samples('albumflow_notifications_total').length).toBeGreaterThan(0);
    expect(samples('temporal_worker_task_slots_available').length).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${workerMetricsPort}/other`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      404,
    );
    const exported = new Set(
      `${await ingress.text()}\n${workerText}`
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
      'workspace',
      'endpoint',
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
