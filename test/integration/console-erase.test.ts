import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionCookie } from '../../src/http/access/session.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey } from '../../src/domain/types.js';
import { consolePaths } from '../../src/ui/paths.js';
import { eventually } from '../harness/albums.js';
import { albumEvent } from '../harness/events.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';

describe('the console erases an album from its page, after a confirmation', () => {
  let stack: Stack;
  let session: string;
  const token = unique('console-erase-token');
  const conversationId = unique('conv-erase');
  // Ids a sender chose: shown escaped on every page, URL-encoded in every link.
  const albumId = unique('trip <b>"&\'');
  let key: AlbumKey;

  beforeAll(async () => {
    stack = await startStack((workspace) => ({ QUIET_PERIOD_MS: '200', API_TOKENS: JSON.stringify({ [token]: [workspace] }) }));
    key = { workspace: stack.workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId, albumId };
    const signedIn = await stack.app.inject({ method: 'POST', url: '/ui/sign-in', payload: { token } });
    const cookie = signedIn.cookies.find((c) => c.name === sessionCookie);
    expect(cookie, signedIn.body).toBeDefined();
    session = `${sessionCookie}=${cookie!.value}`;
    for (const [messageId, index] of [
      ['m0', 0],
      ['m1', 1],
    ] as const) {
      expect((await stack.post(albumEvent({ conversationId, albumId, messageId, index, total: 2 }))).statusCode).toBe(202);
    }
    await eventually(async () => expect(await rows()).toMatchObject({ albums: 1, messages: 2 }));
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** The album's rows and the workspace's erasure receipts. */
  async function rows(): Promise<{ albums: number; messages: number; erasures: number }> {
    const { rows: counted } = await stack.pool.query<{ albums: number; messages: number; erasures: number }>(
      `SELECT (SELECT count(*)::int FROM albums WHERE workflow_id = $1) AS albums,
              (SELECT count(*)::int FROM messages WHERE workspace = $2 AND conversation_id = $3) AS messages,
              (SELECT count(*)::int FROM erasures WHERE workspace = $2) AS erasures`,
      [albumWorkflowId(key), stack.workspace, conversationId],
    );
    return counted[0]!;
  }

  const page = (url: string) => stack.app.inject({ method: 'GET', url, headers: { cookie: session, accept: 'text/html' } });
  const post = (form: Record<string, string>, headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }) =>
    stack.app.inject({
      method: 'POST',
      url: consolePaths.erase(key),
      headers: { cookie: session, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: new URLSearchParams(form).toString(),
    });
  const attribute = (text: string) =>
    text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');

  it('shows the button, asks for confirmation without erasing, refuses another origin, and erases once confirmed', async () => {
    const album = await page(consolePaths.album(key));
    expect(album.statusCode).toBe(200);
    expect(album.body).toContain(`<form class="erase" method="post" action="${attribute(consolePaths.erase(key))}">`);
    expect(album.body).toContain('Erase this album…');
    expect(album.body).not.toContain('<b>');

    // Not confirmed: a page that asks, and nothing erased.
    for (const form of [{}, { confirm: 'no' }] as Array<Record<string, string>>) {
      const asked = await post(form);
      expect(asked.statusCode, asked.body).toBe(200);
      expect(asked.body).toContain('<input type="checkbox" name="confirm" value="yes" required>');
      expect(asked.body).toContain(`Erase album <code>${attribute(albumId)}</code>?`);
      expect(asked.body).toContain('its 2 children and\n    2 attachments');
      expect(asked.body).not.toContain('<b>');
    }
    // A cookie-signed post from another origin is refused by the access plugin (CSRF).
    const forged = await post({ confirm: 'yes' }, { 'sec-fetch-site': 'cross-site' });
    expect(forged.statusCode).toBe(403);
    expect(await rows()).toEqual({ albums: 1, messages: 2, erasures: 0 });
    expect((await page(consolePaths.album(key))).statusCode).toBe(200);

    const confirmed = await post({ confirm: 'yes' });
    expect(confirmed.statusCode, confirmed.body).toBe(303);
    const location = String(confirmed.headers.location);
    const id = /^\/ui\/erasures\/[^/]+\/([0-9a-f-]{36})$/.exec(location)?.[1];
    expect(id, location).toBeDefined();
    expect(location).toBe(consolePaths.erasure(stack.workspace, id!));

    const done = await eventually(async () => {
      const progress = await page(location);
      expect(progress.statusCode).toBe(200);
      expect(progress.body).toContain(`Erasure <code>${id}</code>`);
      expect(progress.body).toContain('data-testid="erasure-state">done</span>');
      return progress.body;
    }, 90_000);
    expect(done).not.toContain('http-equiv="refresh"');
    expect(done).toContain('<tr data-count="albums"><th>Albums</th><td class="num">1</td></tr>');
    expect(done).toContain('<tr data-count="messages"><th>Messages</th><td class="num">2</td></tr>');
    expect(done).toContain(`<dt>Album</dt><dd>${attribute(albumId)}</dd>`);
    expect(done).not.toContain('<b>');

    await eventually(async () => expect(await rows()).toEqual({ albums: 0, messages: 0, erasures: 1 }));
    expect((await page(consolePaths.album(key))).statusCode).toBe(404);
    const again = await post({ confirm: 'yes' });
    expect(again.statusCode).toBe(404);
    expect(again.headers['content-type']).toMatch(/^text\/html/);
    expect((await page(consolePaths.erasure(stack.workspace, '00000000-0000-4000-8000-000000000000'))).statusCode).toBe(404);
  }, 120_000);
});
