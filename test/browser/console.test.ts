import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/common/paths.js';
import { consolePaths } from '../../src/ui/paths.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import { settled, testAlbum, workspaceInbox, type TestAlbum } from '../harness/albums.js';
import { artifactsDir, launchBrowser, type Browser } from './browser.js';
import { jpeg, png } from '../harness/images.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';

const xssCaption = '<img src=x onerror=alert(1)>';

/** What the tests read of an `img` element (this project compiles without the DOM's types). */
interface Img {
  complete: boolean;
  naturalWidth: number;
}

/** The first bytes of an MP4 file: enough for its type to be told from its content. */
const mp4 = Buffer.concat([
  Buffer.from([0, 0, 0, 0x18]),
  Buffer.from('ftypmp42'),
  Buffer.alloc(4),
  Buffer.from('mp42isom'),
  Buffer.alloc(256),
]);

/**
 * Opens the stack's app on a port of its own, for the browser (its `close` closes it). Cookies are kept per
 * host, whatever the port: each stack has a host of its own (all of 127.0.0.0/8 is the loopback), so the
 * session one stack keeps in its database is never sent to, and cleared by, the other.
 */
async function listen(stack: Stack, host: string): Promise<string> {
  await stack.app.listen({ port: 0, host });
  return `http://${host}:${(stack.app.server.address() as AddressInfo).port}`;
}

describe('the console in a browser', () => {
  const adminToken = unique('admin-token');
  const scopedToken = unique('scoped-token');
  const ownWorkspace = unique('ws-own');
  const neighbourWorkspace = unique('ws-neighbour');
  const webhookSecret = 'console-test-secret';
  /** Two workspaces in one database; albums stay open (late window of 10 minutes). */
  let stack: Stack;
  /** Albums that close 3 s after their decision, in a database of their own. */
  let closing: Stack;
  let media: MediaServer;
  /** Where the browser finds each stack's app. */
  const server = { url: '' };
  const closingServer = { url: '' };
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  /** Script errors and CSP violations the browser reported (each test that reads it empties it first). */
  const consoleErrors: string[] = [];
  const albums = {} as Record<'trip' | 'broken' | 'xss' | 'review' | 'waiting' | 'secret' | 'live', TestAlbum>;
  let expiredUrl = '';

  beforeAll(async () => {
    const env = { QUIET_PERIOD_MS: '300', MAX_WAIT_MS: '120000', TEMPORAL_UI_URL: 'http://127.0.0.1:8233' };
    const workspaceSecrets = JSON.stringify({ [ownWorkspace]: [webhookSecret], [neighbourWorkspace]: [webhookSecret] });
    const tokens = JSON.stringify({ [adminToken]: ['*'], [scopedToken]: [ownWorkspace] });
    stack = await startStack({ ...env, LATE_WINDOW_MS: '600000', WORKSPACE_SECRETS: workspaceSecrets, API_TOKENS: tokens });
    closing = await startStack({ ...env, LATE_WINDOW_MS: '3000', API_TOKENS: tokens });
    server.url = await listen(stack, '127.0.0.1');
    closingServer.url = await listen(closing, '127.0.0.2');
    media = await startMediaServer();
    const own = workspaceInbox(stack, ownWorkspace, webhookSecret);

    // As long as a LINE image set's id (64 hex digits), so the pages are seen to fit such ids.
    albums.trip = testAlbum(own, `${unique('trip')}-${crypto.randomBytes(24).toString('hex')}`.slice(0, 64));
    const photos = [await jpeg(1200, 900, 20), await jpeg(900, 1200, 200), await png(800, 800, 280)];
    const tripFiles = [
      ...photos.map((body, i) => ({ body, type: i === 2 ? 'image/png' : 'image/jpeg', name: `beach-${i}.${i === 2 ? 'png' : 'jpg'}` })),
      { body: mp4, type: 'video/mp4', name: 'waves.mp4' },
    ];
    for (const [index, file] of tripFiles.entries()) {
      await albums.trip.send({
        messageId: `trip-${index}`,
        index,
        total: tripFiles.length,
        text: index === 0 ? 'Our trip to the sea' : `day ${index + 1}`,
        attachments: [
          {
            type: file.type.startsWith('video/') ? 'video' : 'image',
            url: media.file(file.body, file.type),
            mime_type: file.type,
            file_name: file.name,
          },
        ],
      });
    }

    albums.broken = testAlbum(own, unique('broken'));
    expiredUrl = media.failing(410);
    await albums.broken.send({
      messageId: 'b-failed',
      index: 0,
      total: 3,
      attachments: [{ type: 'image', url: media.failing(400), mime_type: 'image/jpeg' }],
    });
    await albums.broken.send({
      messageId: 'b-expired',
      index: 1,
      total: 3,
      attachments: [{ type: 'image', url: expiredUrl, mime_type: 'image/jpeg' }],
    });
    await albums.broken.send({
      messageId: 'b-ok',
      index: 2,
      total: 3,
      attachments: [{ type: 'image', url: media.file(photos[0]!, 'image/jpeg'), mime_type: 'image/jpeg' }],
    });

    albums.xss = testAlbum(own, unique('xss'));
    await albums.xss.send({
      messageId: '<b>m1</b>',
      index: 0,
      total: 1,
      text: xssCaption,
      attachments: [
        { type: 'image', url: media.file(photos[1]!, 'image/jpeg'), mime_type: 'image/jpeg', file_name: '"><script>alert(2)</script>.jpg' },
      ],
    });

    albums.review = testAlbum(own, unique('review'));
    await albums.review.send({ messageId: 'r1', index: 0, total: 2 });
    await albums.review.send({ messageId: 'r2', index: 0, total: 2 });

    albums.waiting = testAlbum(own, unique('waiting'));
    await albums.waiting.send({ messageId: 'w1', index: 0, total: 2 });
    albums.secret = testAlbum(workspaceInbox(stack, neighbourWorkspace, webhookSecret), unique('secret'));
    await albums.secret.send({
      messageId: 's1',
      index: 0,
      total: 1,
      attachments: [{ type: 'image', url: media.file(photos[0]!, 'image/jpeg'), mime_type: 'image/jpeg' }],
    });

    albums.live = testAlbum(closing, unique('live'));
    await albums.live.send({
      messageId: 'l1',
      index: 0,
      total: 2,
      attachments: [{ type: 'image', url: media.file(photos[2]!, 'image/png'), mime_type: 'image/png' }],
    });

    for (const name of ['trip', 'broken', 'xss', 'secret'] as const)
      await albums[name].until((s) => (settled(s), expect(s.state).toBe('processed')));
    await albums.review.until((s) => expect(s.review.reasons).toContain('duplicate_index'));
    await albums.waiting.until((s) => expect(s.distinctChildren).toBe(1));
    await albums.live.until((s) => (settled(s), expect(s.distinctChildren).toBe(1)));

    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await media?.close();
    await closing?.close();
    await stack?.close();
  });

  const open = async (url: string, base = server.url) => {
    const response = await page.goto(`${base}${url}`);
    return response!;
  };
  const albumRows = async () =>
    Promise.all((await page.locator('table.albums tbody tr').all()).map((row) => row.getAttribute('data-album')));

  async function signIn(token: string, base = server.url) {
    await open(consolePaths.signIn, base);
    await page.fill('input[name=token]', token);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}${consolePaths.albums}`);
  }

  it('sends a browser without a session to sign in, and to the albums once it has one', async () => {
    await open(consolePaths.albums);
    expect(new URL(page.url()).pathname).toBe(consolePaths.signIn);
    await page.fill('input[name=token]', 'not-a-token-of-this-server');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('[role=alert]').textContent()).toContain('not one albumflow accepts');
    await signIn(adminToken);
    expect(await page.locator('h1').textContent()).toBe('Albums');
  });

  it('lists the albums newest first, and its filters and search narrow the list', async () => {
    await open(consolePaths.albums);
    const inThisDatabase = (['trip', 'broken', 'xss', 'review', 'waiting', 'secret'] as const).map((name) => albums[name].key.albumId);
    expect(await albumRows()).toEqual([...inThisDatabase].reverse());

    await page.selectOption('select[name=state]', 'collecting');
    await page.click('form.filters button');
    expect(await albumRows()).toEqual([albums.waiting.key.albumId]);

    await open(`${consolePaths.albums}?review=yes`);
    expect(await albumRows()).toEqual([albums.review.key.albumId]);

    await open(consolePaths.albums);
    await page.fill('input[name=q]', 'b-expired');
    await page.click('form.filters button');
    expect(await albumRows()).toEqual([albums.broken.key.albumId]);

    await open(consolePaths.albums);
    expect(await page.locator('select[name=workspace] option').allTextContents()).toEqual([
      'all',
      ...[ownWorkspace, neighbourWorkspace].sort(),
    ]);
    await page.selectOption('select[name=workspace]', neighbourWorkspace);
    await page.click('form.filters button');
    expect(await albumRows()).toEqual([albums.secret.key.albumId]);

    await open(`${consolePaths.albums}?provider=telegram&workspace=${encodeURIComponent(ownWorkspace)}`);
    expect(await albumRows()).toEqual([]);
    expect(await page.locator('.empty').textContent()).toBe('No album matches.');
  });

  it('shows one decoded thumbnail per downloaded photo, the video with a poster and a link, and the workflow link', async () => {
    consoleErrors.length = 0;
    await open(consolePaths.album(albums.trip.key));
    const thumbnails = page.locator('ul.grid img.thumbnail');
    await expect.poll(() => thumbnails.count()).toBe(4);
    await expect
      .poll(() =>
        thumbnails.evaluateAll((imgs) => imgs.map((img) => (img as unknown as Img).complete && (img as unknown as Img).naturalWidth > 0)),
      )
      .toEqual([true, true, true, true]);
    expect(await page.locator('img').evaluateAll((imgs) => imgs.every((img) => (img as unknown as Img).naturalWidth > 0))).toBe(true);
    expect(await page.locator('.tile[data-status=downloaded]').count()).toBe(4);
    expect(await page.locator('.tile a.play').getAttribute('href')).toMatch(/^\/workspaces\/[^/]+\/media\/[0-9a-f]{64}$/);
    expect(await page.locator('.file-name').allTextContents()).toEqual(['beach-0.jpg', 'beach-1.jpg', 'beach-2.png', 'waves.mp4']);
    expect(await page.locator('a.temporal').getAttribute('href')).toBe(
      `http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(`album:${[ownWorkspace, 'whatsapp', 'acc_1', albums.trip.key.conversationId, albums.trip.key.albumId].join(':')}`)}`,
    );
    expect(await page.locator('ol.timeline li[data-trigger=expected_count_reached]').count()).toBe(1);

    expect(consoleErrors).toEqual([]);

    fs.mkdirSync(artifactsDir, { recursive: true });
    const screenshot = path.join(artifactsDir, 'album-page.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    if (process.env.UPDATE_SCREENSHOT === '1') fs.copyFileSync(screenshot, path.join(projectRoot, 'docs/console-album.png'));
  });

  it('fits the albums list and an album page to the window, with album and workflow ids as long as LINE’s', async () => {
    expect(albums.trip.key.albumId).toHaveLength(64);
    const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    await open(consolePaths.albums);
    expect(await albumRows()).toContain(albums.trip.key.albumId);
    expect(await overflow()).toBe(0);
    await open(consolePaths.album(albums.trip.key));
    expect(await page.locator('h1 code').textContent()).toBe(albums.trip.key.albumId);
    expect(await overflow()).toBe(0);
  });

  it('shows a failed and an expired attachment with their badges and errors', async () => {
    await open(consolePaths.album(albums.broken.key));
    const failed = page.locator('.tile[data-status=failed]');
    expect(await failed.locator('.badge').textContent()).toBe('failed');
    expect(await failed.locator('.error').textContent()).toBe('HTTP 400');
    const expired = page.locator('.tile[data-status=expired]');
    expect(await expired.locator('.badge').textContent()).toBe('expired');
    expect(await expired.locator('.error').textContent()).toBe('HTTP 410');
    expect(await page.locator('ul.grid img.thumbnail').count()).toBe(1);
    expect(await page.locator('.summary').textContent()).toMatch(/1\/3 downloaded, 1 failed, 1 expired/);
  });

  it('shows a caption of <img src=x onerror=alert(1)> as text, and no dialog opens', async () => {
    consoleErrors.length = 0;
    const response = await open(consolePaths.album(albums.xss.key));
    expect(response.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(await page.locator('p.caption').textContent()).toBe(xssCaption);
    expect(await page.locator('td.ids').first().textContent()).toBe('<b>m1</b>');
    expect(await page.locator('.file-name').textContent()).toBe('"><script>alert(2)</script>.jpg');
    expect(await page.locator('img:not(.thumbnail), b, script:not([src])').count()).toBe(0);
    await expect.poll(() => page.locator('img.thumbnail').evaluate((img) => (img as unknown as Img).naturalWidth)).toBeGreaterThan(0);
    expect(dialogs).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it('updates a collecting album’s page by itself when a child arrives, and stops once the album closes', async () => {
    await signIn(adminToken, closingServer.url);
    await open(consolePaths.album(albums.live.key), closingServer.url);
    expect(await page.getByTestId('album-state').textContent()).toBe('collecting');
    await page.evaluate(() => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true));
    const versionRequests: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/version')) versionRequests.push(request.url());
    });

    await albums.live.send({
      messageId: 'l2',
      index: 1,
      total: 2,
      attachments: [{ type: 'image', url: media.file(await jpeg(640, 480, 120), 'image/jpeg'), mime_type: 'image/jpeg' }],
    });
    await expect.poll(() => page.getByTestId('children-count').textContent(), { timeout: 30_000 }).toBe('2');
    await expect.poll(() => page.locator('ul.grid img.thumbnail').count(), { timeout: 30_000 }).toBe(2);
    await expect.poll(() => page.getByTestId('album-state').textContent(), { timeout: 30_000 }).toBe('processed');
    await expect.poll(() => page.getByTestId('album-state').textContent(), { timeout: 30_000 }).toBe('closed');
    expect(await page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);

    const polled = versionRequests.length;
    expect(polled).toBeGreaterThan(0);
    // Longer than two polling intervals of the page (2 s).
    await page.waitForTimeout(5_000);
    expect(versionRequests.length).toBe(polled);
    expect(await page.locator('#album-live').getAttribute('data-live-url')).toBeNull();
  });

  it('keeps a token from the pages and media of a workspace outside its scope', async () => {
    await open(consolePaths.albums);
    await page.click('form.sign-out button');
    await page.waitForURL(`${server.url}${consolePaths.signIn}`);
    expect((await open(consolePaths.albums)).url()).toContain(consolePaths.signIn);
    await signIn(scopedToken);

    expect(await albumRows()).not.toContain(albums.secret.key.albumId);
    expect(await page.locator('select[name=workspace] option').allTextContents()).toEqual(['all', ownWorkspace]);
    const secretPage = await open(consolePaths.album(albums.secret.key));
    expect(secretPage.status()).toBe(403);
    expect(await page.content()).not.toContain(albums.secret.key.albumId);
    const filtered = await open(`${consolePaths.albums}?workspace=${encodeURIComponent(neighbourWorkspace)}`);
    expect(filtered.status()).toBe(403);

    const sha256 = (await albums.secret.status())!.children[0]!.attachments[0]!.sha256!;
    for (const url of [consolePaths.media(neighbourWorkspace, sha256), consolePaths.thumbnail(neighbourWorkspace, sha256)]) {
      expect((await open(url)).status()).toBe(403);
    }
    // The same file is downloaded in this token's workspace (the broken album's photo), so it opens only there.
    const own = (await albums.broken.status())!.children.find((c) => c.messageId === 'b-ok')!.attachments[0]!.sha256!;
    expect(own).toBe(sha256);
    expect((await open(consolePaths.media(ownWorkspace, own))).status()).toBe(200);
  });

  describe('operator actions (the routes of docs/api.md, "Operator actions")', () => {
    it('“Retry downloads” turns an expired attachment into downloaded once its server answers', async () => {
      await signIn(adminToken);
      await open(consolePaths.album(albums.broken.key));
      media.serve(expiredUrl, await jpeg(700, 500, 320), 'image/jpeg');
      await page.click('button[data-action-url]');
      await expect
        .poll(() => page.locator('.tile[data-message=b-expired]').getAttribute('data-status'), { timeout: 45_000 })
        .toBe('downloaded');
      await expect
        .poll(() => page.locator('.tile[data-message=b-expired] img').evaluate((img) => (img as unknown as Img).naturalWidth))
        .toBeGreaterThan(0);
    });

    it('“Resolve review” takes the album out of the review queue', async () => {
      await signIn(adminToken);
      await open(consolePaths.review);
      expect(await albumRows()).toContain(albums.review.key.albumId);
      await open(consolePaths.album(albums.review.key));
      await page.fill('form.action input[name=note]', 'checked: two photos, both kept');
      await page.click('form.action button');
      await expect.poll(() => page.locator('.action-result').textContent()).toContain('Done');
      await open(consolePaths.review);
      expect(await albumRows()).not.toContain(albums.review.key.albumId);
      await open(consolePaths.album(albums.review.key));
      expect(await page.locator('.review-box .badge').textContent()).toBe('review resolved');
      expect(await page.locator('.review-box q').textContent()).toBe('checked: two photos, both kept');
    });

    it('shows why an action was refused: nothing can be retried once the album is closed', async () => {
      await signIn(adminToken, closingServer.url);
      await open(consolePaths.album(albums.live.key), closingServer.url);
      expect(await page.getByTestId('album-state').textContent()).toBe('closed');
      await page.click('button[data-action-url]');
      await expect
        .poll(() => page.locator('.action-result').textContent())
        .toBe("Refused (409): the album's workflow is closed: nothing can be retried");
    });
  });
});
