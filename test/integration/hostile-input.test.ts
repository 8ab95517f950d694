import proto from '@temporalio/proto';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { albumProfileOf } from '../../src/platforms/index.js';
import { startSearchAttributes } from '../../src/temporal/workflow-start.js';
import { resolveReviewUpdate, workflowTypes } from '../../workflows/definitions.js';
import type { AlbumView } from '../../src/domain/types.js';
import type { AlbumWorkflowInput } from '../../workflows/types.js';
import { eventually } from '../harness/albums.js';
import { albumEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';

// The reported cases of hostile text and numbers: each is a 4xx naming the field, never a 5xx, and a
// note the workflow could not have stored never reaches its history. The property test of every route
// is hostile-routes.test.ts.

let stack: Stack;
const token = unique('hostile-admin-token');
const headers = { authorization: `Bearer ${token}` };

beforeAll(async () => {
  stack = await startStack({
    QUIET_PERIOD_MS: '300',
    MAX_WAIT_MS: '3000',
    LATE_WINDOW_MS: '4000',
    API_TOKENS: JSON.stringify({ [token]: ['*'] }),
  });
});

afterAll(async () => {
  await stack.close();
});

const ws = () => encodeURIComponent(stack.workspace);
const albumPath = (conversation: string) => `/workspaces/${ws()}/albums/whatsapp/acc_1/${encodeURIComponent(conversation)}/alb`;

async function get(url: string) {
  return stack.app.inject({ method: 'GET', url, headers });
}

function expectRefusal(response: { statusCode: number; json: () => unknown }, status: number, field: RegExp | string) {
  expect(response.statusCode).toBe(status);
  const body = response.json() as { error: { code: string; message: string } };
  if (typeof field === 'string') expect(body.error.code).toBe(field);
  else expect(body.error.message).toMatch(field);
}

const cursorOf = (id: string) => Buffer.from(`album:${id}`).toString('base64url');

describe('numbers beyond bigint', () => {
  it('refuses a console page cursor and an API list cursor past bigint with a 400 naming it', async () => {
    expectRefusal(await get('/ui?before=9999999999999999999'), 400, /^querystring\/before /);
    expectRefusal(await get('/ui/review?before=9223372036854775808'), 400, /^querystring\/before /);
    expectRefusal(await get(`/workspaces/${ws()}/albums?cursor=${cursorOf('9999999999999999999')}`), 400, 'invalid_cursor');
    expectRefusal(await get(`/workspaces/${ws()}/albums?cursor=${cursorOf('9223372036854775808')}`), 400, 'invalid_cursor');
    expectRefusal(await get(`/workspaces/${ws()}/albums?limit=9999999999999999999`), 400, /^querystring\/limit /);
  });

  it('still takes the cursors it hands out', async () => {
    expect((await get('/ui?before=999999999999999999')).statusCode).toBe(200);
    expect((await get(`/workspaces/${ws()}/albums?cursor=${cursorOf('999999999999999999')}`)).statusCode).toBe(200);
  });
});

describe('text PostgreSQL cannot store, in a path segment or a query parameter', () => {
  const storable = /must not contain a NUL character or an unpaired surrogate$/;

  it.each([
    ['/ui?q=%00', 'querystring/q'],
    ['/ui?provider=%00', 'querystring/provider'],
    ['/ui?workspace=a%00', 'querystring/workspace'],
    ['/ui/review?q=x%00y', 'querystring/q'],
    ['/workspaces/%00/albums', 'params/workspace'],
    ['/workspaces/{ws}/albums?provider=%00', 'querystring/provider'],
    ['/workspaces/{ws}/albums?conversation=%00', 'querystring/conversation'],
    ['/workspaces/%00/albums/whatsapp/acc_1/conv/alb', 'params/workspace'],
    ['/workspaces/{ws}/albums/whatsapp/%00/conv/alb', 'params/account'],
    ['/workspaces/{ws}/albums/whatsapp/acc_1/conv/%00', 'params/album'],
    ['/workspaces/{ws}/messages/%00/acc_1/conv/m', 'params/provider'],
    ['/workspaces/{ws}/messages/whatsapp/acc_1/%00/m', 'params/conversation'],
    ['/workspaces/{ws}/messages/whatsapp/acc_1/conv/%00', 'params/message'],
    [`/workspaces/%00/media/${'0'.repeat(64)}`, 'params/workspace'],
    ['/ui/albums/{ws}/whatsapp/acc_1/conv/%00', 'params/album'],
    ['/ui/albums/{ws}/whatsapp/acc_1/conv/%00/version', 'params/album'],
  ])('GET %s is a 400 naming %s', async (url, field) => {
    const response = await get(url.replace('{ws}', ws()));
    expectRefusal(response, 400, new RegExp(`^${field} `));
    expectRefusal(response, 400, storable);
  });
});

describe('a control character in a path segment or a query parameter', () => {
  it.each([
    ['/workspaces/{ws}/albums/whatsapp/acc_1/conv/alb%01', 'params/album'],
    ['/workspaces/{ws}/messages/whatsapp/acc%1B/conv/m', 'params/account'],
    ['/workspaces/{ws}/albums?conversation=c%0Ad', 'querystring/conversation'],
    ['/ui?q=%C2%9B', 'querystring/q'],
  ])('GET %s is a 400 naming %s', async (url, field) => {
    expectRefusal(await get(url.replace('{ws}', ws())), 400, new RegExp(`^${field} must not contain a control character$`));
  });
});

describe('a URL the router cannot take', () => {
  it('is refused with the error body of every other refusal', async () => {
    const undecodable = await get(`/workspaces/${ws()}/albums/whatsapp/acc_1/conv/%ED%A0%80`);
    expect(undecodable.statusCode).toBe(400);
    expect(undecodable.json()).toEqual({
      error: { code: 'invalid_url', message: expect.stringContaining('is not a valid url component') as unknown },
    });
    const tooLong = await get(`/workspaces/${ws()}/albums/whatsapp/acc_1/conv/${'x'.repeat(3000)}`);
    expect(tooLong.statusCode).toBe(414);
    expect(tooLong.json()).toEqual({
      error: { code: 'path_segment_too_long', message: expect.stringContaining('max param length') as unknown },
    });
  });
});

describe('a UnifyPort event with a lone surrogate in an identity', () => {
  it('is quarantined with a 400, as a NUL is', async () => {
    const event = albumEvent({ conversationId: unique('conv'), albumId: 'alb\ud800', messageId: 'm0' });
    const response = await stack.post(event);
    expect(response.statusCode).toBe(400);
    expect(response.body).toMatchObject({ error: { code: 'unstorable_event' } });
    const { rows } = await stack.pool.query<{ reason: string }>(`SELECT reason FROM quarantine WHERE workspace = $1 AND raw = $2`, [
      stack.workspace,
      Buffer.from(JSON.stringify(event)),
    ]);
    expect(rows).toEqual([{ reason: 'unstorable_event' }]);
  });
});

describe('resolve-review with a note PostgreSQL cannot store', () => {
  async function flaggedAlbum(): Promise<{ conversation: string; workflowId: string }> {
    const conversation = unique('conv');
    expect(
      (await stack.post(albumEvent({ conversationId: conversation, albumId: 'alb', messageId: 'm0', index: 'first' }))).statusCode,
    ).toBe(202);
    const decided = await eventually(async () => {
      const response = await get(albumPath(conversation));
      const body = response.json<AlbumView>();
      expect(response.headers['x-albumflow-source']).toBe('workflow');
      expect(body.decisions).toHaveLength(1);
      expect(body.review.required).toBe(true);
      return body;
    });
    return { conversation, workflowId: decided.workflowId };
  }

  async function updateEvents(workflowId: string): Promise<string[]> {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    const { EventType } = proto.temporal.api.enums.v1;
    return (history.events ?? [])
      .map((event) => EventType[event.eventType ?? 0] ?? String(event.eventType))
      .filter((type) => type.startsWith('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE'));
  }

  it.each([
    ['a NUL', 'x\u0000'],
    ['an unpaired surrogate', 'checked \ud800'],
  ])('refuses %s with a 400 before the workflow sees it; the workflow refuses it too, and the album still closes', async (_what, note) => {
    const { conversation, workflowId } = await flaggedAlbum();

    const response = await stack.app.inject({
      method: 'POST',
      url: `${albumPath(conversation)}/actions/resolve-review`,
      headers,
      payload: { note },
    });
    expectRefusal(response, 400, /^body\/note must not contain a NUL character or an unpaired surrogate$/);

    // The same note sent to the workflow directly, as the route would: its validator refuses it.
    const input: AlbumWorkflowInput = {
      key: { workspace: stack.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: conversation, albumId: 'alb' },
      timings: stack.config.album,
      profile: albumProfileOf('unifyport'),
    };
    const refusal = await stack.client.workflow
      .executeUpdateWithStart(resolveReviewUpdate, {
        args: [{ note }],
        startWorkflowOperation: new WithStartWorkflowOperation(workflowTypes.album, {
          workflowId,
          taskQueue: stack.config.temporal.taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: startSearchAttributes(input.key),
        }),
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(refusal).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refusal as WorkflowUpdateFailedError).cause).toBeInstanceOf(ApplicationFailure);
    expect(((refusal as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe('InvalidNote');
    expect(await updateEvents(workflowId)).toEqual([]);

    const closed = await eventually(async () => {
      const body = (await get(albumPath(conversation))).json<AlbumView>();
      expect(body.state).toBe('closed');
      return body;
    }, 60_000);
    expect(closed.review).toEqual({ required: true, reasons: ['invalid_metadata'] });
    expect(await updateEvents(workflowId)).toEqual([]);
  });

  it('takes a note with tabs and line breaks, and refuses one with any other control character', async () => {
    const { conversation } = await flaggedAlbum();
    const resolve = (note: string) =>
      stack.app.inject({ method: 'POST', url: `${albumPath(conversation)}/actions/resolve-review`, headers, payload: { note } });
    const escaped = await resolve('line 1\u001b[31m red');
    expectRefusal(escaped, 400, /^body\/note must not contain a control character other than a tab or a line break$/);
    const note = 'line 1\r\nline 2\tend';
    const response = await resolve(note);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ resolved: { note } });
  });
});
