import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenHash } from '../../src/tenants/tokens.js';
import type { AlbumListBody } from '../../src/http/schemas.js';
import type { AlbumView } from '../../src/domain/types.js';
import { eventually } from '../harness/albums.js';
import { operatorActions, storedNotifications } from '../harness/rows.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import { albumEvent } from '../harness/events.js';

let stack: Stack;
let media: MediaServer;
const token = unique('operator-token');
const headers = { authorization: `Bearer ${token}` };

beforeAll(async () => {
  stack = await startStack({
    QUIET_PERIOD_MS: '300',
    MAX_WAIT_MS: '3000',
    LATE_WINDOW_MS: '6000',
    API_TOKENS: JSON.stringify({ [token]: ['*'] }),
  });
  media = await startMediaServer();
});

afterAll(async () => {
  await stack.close();
  await media.close();
});

const albumPath = (conversation: string, album = 'alb') =>
  `/workspaces/${encodeURIComponent(stack.workspace)}/albums/whatsapp/acc_1/${encodeURIComponent(conversation)}/${album}`;

async function status(conversation: string, source: 'auto' | 'database' = 'auto'): Promise<AlbumView> {
  const response = await stack.app.inject({ method: 'GET', url: `${albumPath(conversation)}?source=${source}`, headers });
  expect(response.statusCode).toBe(200);
  return response.json<AlbumView>();
}

function post(url: string, body?: object) {
  return stack.app.inject({ method: 'POST', url, headers, ...(body ? { payload: body } : {}) });
}

async function historyEventTypes(workflowId: string): Promise<string[]> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const { EventType } = proto.temporal.api.enums.v1;
  return (history.events ?? []).map((event) => EventType[event.eventType ?? 0] ?? String(event.eventType));
}

describe('a redelivery that brings the URL an earlier delivery lacked', () => {
  it('downloads it at once and notifies media settled again, in the workflow and in PostgreSQL alike', async () => {
    const conversation = unique('conv');
    const path = `/${unique('late-url')}.jpg`;
    media.serve(path, `photo ${path}`);
    const first = albumEvent({
      conversationId: conversation,
      albumId: 'alb',
      messageId: 'm0',
      index: 0,
      total: 1,
      attachments: [{ type: 'image' }],
    });
    expect((await stack.post(first)).statusCode).toBe(202);
    const decided = await eventually(async () => {
      const body = await status(conversation);
      expect(body.decisions).toHaveLength(1);
      expect(body.children[0]?.attachments[0]?.status).toBe('unavailable');
      return body;
    });
    const workflowId = decided.workflowId;
    await eventually(async () =>
      expect((await storedNotifications(stack.pool, workflowId)).map((n) => n.type)).toContain('album.media_settled'),
    );

    const again = albumEvent({
      conversationId: conversation,
      albumId: 'alb',
      messageId: 'm0',
      index: 0,
      total: 1,
      attachments: [{ type: 'image', url: media.url(path) }],
    });
    expect((await stack.post(again)).body).toMatchObject({ status: 'accepted', duplicate: true });

    const downloaded = await eventually(async () => {
      const body = await status(conversation);
      expect(body.children[0]?.attachments[0]).toMatchObject({ status: 'downloaded', bytes: `photo ${path}`.length });
      return body;
    });
    expect(await status(conversation, 'database')).toEqual(downloaded);
    expect(downloaded.decisions).toHaveLength(1);
    const notices = await eventually(async () => {
      const ids = (await storedNotifications(stack.pool, workflowId)).filter((n) => n.type === 'album.media_settled').map((n) => n.id);
      expect(ids).toHaveLength(2);
      return ids;
    });
    expect(notices).toEqual([`${workflowId}/1/album.media_settled`, `${workflowId}/1/album.media_settled/2`]);
    const settled = (await storedNotifications(stack.pool, workflowId)).find((n) => n.id === notices[1]);
    expect(settled?.payload.album?.media).toMatchObject({ downloaded: 1, pending: 0 });
    expect(media.fetches.filter((f) => f.path === path)).toHaveLength(1);
  });
});

describe('the PostgreSQL view before the workflow has seen a child', () => {
  it('derives the metadata review reasons from the stored children', async () => {
    const conversation = unique('conv');
    const child = albumEvent({ conversationId: conversation, albumId: 'alb', messageId: 'm0', index: 'first', total: 'three' });
    expect((await stack.post(child)).statusCode).toBe(202);
    const early = await status(conversation, 'database');
    expect(early.review).toEqual({ required: true, reasons: ['invalid_metadata'] });
    const live = await eventually(async () => {
      const response = await stack.app.inject({ method: 'GET', url: albumPath(conversation), headers });
      expect(response.headers['x-albumflow-source']).toBe('workflow');
      return response.json<AlbumView>();
    });
    expect(live.review).toEqual(early.review);
  });
});

describe('retry-downloads', () => {
  it('tries a failed or expired attachment again once its server answers, as the first attempt did', async () => {
    const conversation = unique('conv');
    const path = `/${unique('broken')}.jpg`;
    const event = albumEvent({
      conversationId: conversation,
      albumId: 'alb',
      messageId: 'm0',
      index: 0,
      total: 1,
      attachments: [{ type: 'image', url: media.url(path) }],
    });
    await stack.post(event);
    const expired = await eventually(async () => {
      const body = await status(conversation);
      expect(body.children[0]?.attachments[0]).toMatchObject({ status: 'expired', error: 'HTTP 404' });
      return body;
    });

    media.serve(path, `photo ${path}`);
    const response = await post(`${albumPath(conversation)}/actions/retry-downloads`);
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ status: 'accepted', retried: 1 });

    await eventually(async () => {
      const body = await status(conversation);
      expect(body.children[0]?.attachments[0]).toMatchObject({ status: 'downloaded', error: null });
      expect(await status(conversation, 'database')).toEqual(body);
    });
    expect(media.fetches.filter((f) => f.path === path)).toHaveLength(2);
    const types = await historyEventTypes(expired.workflowId);
    expect(types).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED');
    const rows = await operatorActions.read(stack.pool, { workflowId: expired.workflowId }, ['action', 'requested_by']);
    expect(rows).toEqual([{ action: 'retry-downloads', requested_by: tokenHash(token) }]);
  });

  it('answers 404 for an album never stored', async () => {
    const response = await post(`${albumPath('nowhere', 'none')}/actions/retry-downloads`);
    expect(response.statusCode).toBe(404);
  });
});

describe('resolve-review', () => {
  const queue = async () => {
    const response = await stack.app.inject({
      method: 'GET',
      url: `/workspaces/${encodeURIComponent(stack.workspace)}/albums?review=true&limit=200`,
      headers,
    });
    return response.json<AlbumListBody>().items.map((item) => item.key.conversationId);
  };

  it('takes the album out of the review queue until a new reason puts it back', async () => {
    const conversation = unique('conv');
    for (const messageId of ['m0', 'm1']) {
      await stack.post(albumEvent({ conversationId: conversation, albumId: 'alb', messageId, index: 0, total: 3 }));
    }
    await eventually(async () => expect(await queue()).toContain(conversation));
    const flagged = await status(conversation);
    expect(flagged.review).toEqual({ required: true, reasons: ['duplicate_index'] });

    const response = await post(`${albumPath(conversation)}/actions/resolve-review`, { note: 'same photo twice, fine' });
    expect(response.statusCode).toBe(200);
    const { resolved } = response.json<{ resolved: { at: string; note: string } }>();
    expect(resolved.note).toBe('same photo twice, fine');

    expect((await status(conversation)).review).toEqual({ required: false, reasons: ['duplicate_index'], resolved });
    expect((await status(conversation, 'database')).review).toEqual({ required: false, reasons: ['duplicate_index'], resolved });
    expect(await queue()).not.toContain(conversation);

    await stack.post(albumEvent({ conversationId: conversation, albumId: 'alb', messageId: 'm2', index: 1, total: 5 }));
    await eventually(async () =>
      expect((await status(conversation)).review).toEqual({ required: true, reasons: ['total_conflict', 'duplicate_index'] }),
    );
    await eventually(async () => expect(await queue()).toContain(conversation));
  });

  it('resolves a closed album through a new run of its workflow, and refuses an album with nothing to review', async () => {
    const conversation = unique('conv');
    for (const messageId of ['m0', 'm1']) {
      await stack.post(albumEvent({ conversationId: conversation, albumId: 'alb', messageId, index: 0, total: 2 }));
    }
    const closed = await eventually(async () => {
      const body = await status(conversation);
      expect(body.state).toBe('closed');
      return body;
    }, 60_000);
    expect(closed.review.required).toBe(true);

    const refusedRetry = await post(`${albumPath(conversation)}/actions/retry-downloads`);
    expect(refusedRetry.statusCode).toBe(409);
    expect(refusedRetry.json()).toMatchObject({ error: { code: 'album_closed' } });

    const response = await post(`${albumPath(conversation)}/actions/resolve-review`, { note: 'ok' });
    expect(response.statusCode).toBe(200);
    await eventually(async () => expect((await status(conversation)).review).toMatchObject({ required: false, resolved: { note: 'ok' } }));
    expect(await queue()).not.toContain(conversation);

    const calm = unique('conv');
    await stack.post(albumEvent({ conversationId: calm, albumId: 'alb', messageId: 'm0', index: 0, total: 1 }));
    await eventually(async () => expect((await status(calm)).decisions).toHaveLength(1));
    const nothing = await post(`${albumPath(calm)}/actions/resolve-review`, { note: 'x' });
    expect(nothing.statusCode).toBe(409);
    expect(nothing.json()).toMatchObject({ error: { code: 'review_not_required' } });
  });
});
