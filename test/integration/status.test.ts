import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlbumView } from '../../src/domain/types.js';
import type { AlbumListBody, MessageStatus } from '../../src/http/schemas.js';
import { eventually } from '../harness/albums.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { unique } from '../harness/random.js';
import { albumStatusViewsTotal } from '../../src/common/metrics.js';
import { startStack, type Stack } from '../harness/stack.js';
import { albumEvent } from '../harness/events.js';

let stack: Stack;
let media: MediaServer;
const token = unique('status-token');
const authorization = `Bearer ${token}`;

beforeAll(async () => {
  stack = await startStack({
    QUIET_PERIOD_MS: '300',
    MAX_WAIT_MS: '3000',
    LATE_WINDOW_MS: '2500',
    API_TOKENS: JSON.stringify({ [token]: ['*'] }),
  });
  media = await startMediaServer();
});

afterAll(async () => {
  await stack.close();
  await media.close();
});

async function get<T>(url: string) {
  const response = await stack.app.inject({ method: 'GET', url, headers: { authorization } });
  return { statusCode: response.statusCode, source: response.headers['x-albumflow-source'], body: response.json<T>() };
}

const albumUrl = (conversation: string, album: string, query = '') =>
  `/workspaces/${encodeURIComponent(stack.workspace)}/albums/whatsapp/acc_1/${encodeURIComponent(conversation)}/${encodeURIComponent(album)}${query}`;

describe('album status', () => {
  it('answers from the running workflow and from PostgreSQL with the same body', async () => {
    const conversation = unique('conv');
    const photos = [0, 1, 2].map((index) =>
      albumEvent({
        conversationId: conversation,
        albumId: 'alb/1 ü',
        messageId: `m${index}`,
        index,
        total: 3,
        attachments: [{ type: 'image', url: media.file(`photo ${index}`) }, { type: 'image' }],
      }),
    );
    for (const photo of [photos[2], photos[0], photos[0], photos[1]]) expect((await stack.post(photo)).statusCode).toBe(202);

    const live = await eventually(async () => {
      const response = await get<AlbumView>(albumUrl(conversation, 'alb/1 ü'));
      expect(response.source).toBe('workflow');
      expect(response.body.decisions).toHaveLength(1);
      expect(response.body.media.pending).toBe(0);
      return response.body;
    });
    expect(live).toMatchObject({
      key: { workspace: stack.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: conversation, albumId: 'alb/1 ü' },
      state: 'processed',
      expectedTotal: 3,
      distinctChildren: 3,
      expectedCountReached: true,
      review: { required: false, reasons: [] },
      media: { total: 6, downloaded: 3, unavailable: 3, pending: 0, failed: 0, expired: 0 },
    });
    expect(live.children.map((c) => c.messageId)).toEqual(['m0', 'm1', 'm2']);
    expect(live.decisions[0]).toMatchObject({ seq: 1, trigger: 'expected_count_reached', childMessageIds: ['m0', 'm1', 'm2'] });
    expect(live.children[0]!.attachments[0]).toMatchObject({ position: 0, status: 'downloaded', bytes: 7 });

    const recorded = await get<AlbumView>(albumUrl(conversation, 'alb/1 ü', '?source=database'));
    expect(recorded.source).toBe('database');
    expect(recorded.body).toEqual(live);

    // The workflow reports `closed` itself in its last moments; once it completed, PostgreSQL answers.
    const closed = await eventually(async () => {
      const response = await get<AlbumView>(albumUrl(conversation, 'alb/1 ü'));
      expect(response.source).toBe('database');
      return response.body;
    });
    expect(closed).toEqual({ ...live, state: 'closed' });
  });

  it('queries a running workflow once per change of its history: a page that refreshes itself costs no query while the album is unchanged', async () => {
    const conversation = unique('conv');
    const views = async () => {
      // Copied: prom-client hands out the counter's own objects.
      const counts = new Map((await albumStatusViewsTotal.get()).values.map((v) => [v.labels.source, v.value]));
      return (source: string) => counts.get(source) ?? 0;
    };
    const view = () => get<AlbumView>(albumUrl(conversation, 'refreshed'));
    await stack.post(albumEvent({ conversationId: conversation, albumId: 'refreshed', messageId: 'r0', index: 0, total: 2 }));
    // Once the workflow's first task is done its history stops growing, and its answer is kept.
    const first = await eventually(async () => {
      const counted = await views();
      const response = await view();
      expect(response.source).toBe('workflow');
      expect(response.body.distinctChildren).toBe(1);
      expect((await views())('cached') - counted('cached')).toBe(1);
      return response.body;
    });

    const before = await views();
    for (let refresh = 0; refresh < 5; refresh++) {
      const refreshed = await view();
      expect(refreshed.source).toBe('workflow');
      expect(refreshed.body).toEqual(first);
    }
    const after = await views();
    expect(after('workflow') - before('workflow')).toBe(0);
    expect(after('cached') - before('cached')).toBe(5);

    await stack.post(albumEvent({ conversationId: conversation, albumId: 'refreshed', messageId: 'r1', index: 1, total: 2 }));
    const decided = await eventually(async () => {
      const response = await view();
      expect(response.body.decisions).toHaveLength(1);
      return response.body;
    });
    expect(decided.distinctChildren).toBe(2);
    expect((await views())('workflow')).toBeGreaterThan(after('workflow'));
  });

  it('is 404 for an album no child of was stored, and 400 for a malformed request', async () => {
    const missing = await get<{ error: { code: string } }>(albumUrl('nowhere', 'none'));
    expect(missing.statusCode).toBe(404);
    expect(missing.body.error.code).toBe('album_not_found');

    const tooLong = await get<{ error: { code: string } }>(albumUrl('x'.repeat(600), 'a'));
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.body.error.code).toBe('invalid_request');

    const badSource = await get<{ error: { code: string } }>(albumUrl('c', 'a', '?source=cache'));
    expect(badSource.statusCode).toBe(400);
  });
});

describe('message status', () => {
  it('shows an album child with the decisions that included it, and a standalone message with its own workflow', async () => {
    const conversation = unique('conv');
    await stack.post(albumEvent({ conversationId: conversation, albumId: 'a1', messageId: 'c1', index: 0, total: 1 }));
    await stack.post(albumEvent({ conversationId: conversation, messageId: 'solo', text: 'just me' }));
    await stack.post(albumEvent({ conversationId: conversation, messageId: 'solo', text: 'just me' }));
    const base = `/workspaces/${encodeURIComponent(stack.workspace)}/messages/whatsapp/acc_1/${conversation}`;

    const child = await eventually(async () => {
      const response = await get<MessageStatus>(`${base}/c1`);
      expect(response.body.decisions).toHaveLength(1);
      return response.body;
    });
    expect(child).toMatchObject({
      workflowId: `album:${encodeURIComponent(stack.workspace)}:whatsapp:acc_1:${conversation}:a1`,
      albumKey: { albumId: 'a1', conversationId: conversation },
      index: 0,
      total: 1,
      deliveryCount: 1,
      decisions: [{ seq: 1, trigger: 'expected_count_reached', childMessageIds: ['c1'] }],
    });

    const solo = await eventually(async () => {
      const response = await get<MessageStatus>(`${base}/solo`);
      expect(response.body.decisions).toHaveLength(1);
      return response.body;
    });
    expect(solo).toMatchObject({
      workflowId: `message:${encodeURIComponent(stack.workspace)}:whatsapp:acc_1:${conversation}:solo`,
      albumKey: null,
      caption: 'just me',
      deliveryCount: 2,
      attachments: [{ position: 0, status: 'unavailable' }],
      decisions: [{ seq: 1, trigger: 'standalone', childMessageIds: ['solo'] }],
    });

    const missing = await get<{ error: { code: string } }>(`${base}/nope`);
    expect(missing.statusCode).toBe(404);
    expect(missing.body.error.code).toBe('message_not_found');
  });
});

describe('album list', () => {
  it('filters by review, state, provider and conversation, newest first, with a cursor', async () => {
    const conversation = unique('conv');
    const post = (albumId: string, messageId: string, total: number, provider = 'whatsapp') =>
      stack.post(albumEvent({ conversationId: conversation, albumId, messageId, index: 0, total, provider }));
    await post('older', 'o1', 1);
    await post('conflicted', 'k1', 2);
    await stack.post(albumEvent({ conversationId: conversation, albumId: 'conflicted', messageId: 'k2', index: 1, total: 3 }));
    await post('newest', 'n1', 1, 'telegram');

    const list = (query: string) =>
      get<AlbumListBody>(`/workspaces/${encodeURIComponent(stack.workspace)}/albums?conversation=${conversation}${query}`);
    const all = await eventually(async () => {
      const response = await list('');
      expect(response.body.items.map((a) => a.state)).toEqual(['processed', 'processed', 'processed']);
      return response.body;
    });
    expect(all.items.map((a) => a.key.albumId)).toEqual(['newest', 'conflicted', 'older']);
    expect(all.items[1]).toMatchObject({ distinctChildren: 2, review: { required: true, reasons: ['total_conflict'] } });
    expect(all.nextCursor).toBeNull();

    expect((await list('&review=true')).body.items.map((a) => a.key.albumId)).toEqual(['conflicted']);
    expect((await list('&review=false')).body.items.map((a) => a.key.albumId)).toEqual(['newest', 'older']);
    expect((await list('&provider=telegram')).body.items.map((a) => a.key.albumId)).toEqual(['newest']);
    expect((await list('&state=collecting')).body.items).toEqual([]);

    const first = await list('&limit=2');
    expect(first.body.items.map((a) => a.key.albumId)).toEqual(['newest', 'conflicted']);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await list(`&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items.map((a) => a.key.albumId)).toEqual(['older']);
    expect(second.body.nextCursor).toBeNull();

    const badCursor = await list('&cursor=bm9wZQ');
    expect(badCursor.statusCode).toBe(400);
    expect((badCursor.body as unknown as { error: { code: string } }).error.code).toBe('invalid_cursor');
  });
});

describe('metrics and API docs', () => {
  it('serves Prometheus metrics with the ingress, dispatcher and workflow counters', async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    for (const name of [
      'albumflow_webhooks_total',
      'albumflow_signature_failures_total',
      'albumflow_ingest_batch_size',
      'albumflow_outbox_depth',
      'albumflow_outbox_oldest_age_seconds',
      'albumflow_signals_sent_total',
      'albumflow_children_per_signal',
      'albumflow_decisions_total',
      'albumflow_downloads_total',
      'albumflow_notifications_total',
      'albumflow_delivery_attempts_total',
    ]) {
      expect(response.body).toContain(`# TYPE ${name}`);
    }
    expect(response.body).toMatch(/albumflow_webhooks_total\{status="202",outcome="accepted"\} [1-9]/);
  });

  it('keeps the standard names of the process metrics, labels signature failures with the API code, and times requests by route', async () => {
    const unsigned = await stack.app.inject({
      method: 'POST',
      url: `/webhooks/unifyport/${encodeURIComponent(stack.workspace)}`,
      headers: { 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(unsigned.json()).toMatchObject({ error: { code: 'missing_signature' } });
    const body = (await stack.app.inject({ method: 'GET', url: '/metrics', headers: { authorization } })).body;
    expect(body).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(body).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(body).not.toMatch(/^albumflow_process_/m);
    expect(body).toMatch(/albumflow_signature_failures_total\{reason="missing_signature"\} [1-9]/);
    expect(body).toMatch(
      /albumflow_http_request_duration_seconds_count\{method="POST",route="\/webhooks\/unifyport\/:workspace",status_code="401"\} [1-9]/,
    );
    expect(body).not.toContain(`route="/webhooks/unifyport/${stack.workspace}"`);
  });

  it('publishes an OpenAPI document generated from the route schemas', async () => {
    const response = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(response.statusCode).toBe(200);
    const document = response.json<{ openapi: string; paths: Record<string, Record<string, unknown>> }>();
    expect(document.openapi).toMatch(/^3\./);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/webhooks/unifyport/{workspace}',
        '/workspaces/{workspace}/albums/{provider}/{account}/{conversation}/{album}',
        '/workspaces/{workspace}/messages/{provider}/{account}/{conversation}/{message}',
        '/workspaces/{workspace}/albums',
      ]),
    );
    expect(document.paths['/workspaces/{workspace}/albums/{provider}/{account}/{conversation}/{album}']?.get).toBeDefined();
    const ui = await stack.app.inject({ method: 'GET', url: '/docs' });
    expect([200, 302]).toContain(ui.statusCode);
  });
});
