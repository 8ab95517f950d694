import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ErrorBody } from '../../src/common/http-error.js';
import { templatesDir } from '../../src/ui/views.js';
import { mediaLinksFor } from '../../src/media/links.js';
import { capturedLogger, testBucket } from '../harness/env.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import { settled, testAlbum, workspaceInbox } from '../harness/albums.js';
import { jpeg, png, pngBomb } from '../harness/images.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';

const iconsDir = path.join(path.dirname(templatesDir), 'assets/icons');
const icon = (name: string) => fs.readFileSync(path.join(iconsDir, `${name}.svg`));

describe.each([
  { store: 'the directory store', env: (): Record<string, string> => ({}) },
  { store: 'an S3 bucket', env: (): Record<string, string> => ({ MEDIA_STORE: testBucket() }) },
])('media routes on $store', ({ env }) => {
  let stack: Stack;
  let media: MediaServer;
  const workspace = unique('ws-media');
  const otherWorkspace = unique('ws-other');
  const token = unique('token-for-both-workspaces');
  const otherToken = unique('token-for-the-other-workspace');
  const files = {} as Record<'photo' | 'picture' | 'notImage' | 'page' | 'bomb', { body: Buffer; sha256: string }>;
  const auth = { authorization: `Bearer ${token}` };

  const logs = capturedLogger('console-media', 'info');

  beforeAll(async () => {
    stack = await startStack(
      {
        ...env(),
        QUIET_PERIOD_MS: '200',
        WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['media-secret'] }),
        API_TOKENS: JSON.stringify({ [token]: [workspace, otherWorkspace], [otherToken]: [otherWorkspace] }),
      },
      { logger: logs.logger },
    );
    media = await startMediaServer();
    const bodies = {
      photo: { body: await jpeg(1600, 1200, 30), type: 'image/jpeg; charset=binary' },
      picture: { body: await png(300, 200, 210), type: 'image/png' },
      notImage: { body: Buffer.from('just text, whatever the server says it is'), type: 'image/jpeg' },
      page: { body: Buffer.from('<html><script>alert(1)</script></html>'), type: 'text/html' },
      bomb: { body: await pngBomb(30_000), type: 'image/png' },
    };
    const album = testAlbum(workspaceInbox(stack, workspace, 'media-secret'), unique('alb'));
    const names = Object.keys(bodies) as (keyof typeof bodies)[];
    for (const [index, name] of names.entries()) {
      const { body, type } = bodies[name];
      await album.send({
        messageId: name,
        index,
        total: names.length,
        attachments: [{ type: 'image', url: media.file(body, type), mime_type: type }],
      });
    }
    const status = await album.until((s) => {
      settled(s);
      expect(s.media.downloaded).toBe(names.length);
    });
    for (const child of status.children) {
      const name = child.messageId as keyof typeof files;
      files[name] = { body: bodies[name].body, sha256: child.attachments[0]!.sha256! };
    }
  });

  afterAll(async () => {
    await media?.close();
    await stack?.close();
  });

  const get = (url: string, headers: Record<string, string> = auth) => stack.app.inject({ method: 'GET', url, headers });
  const mediaUrl = (sha256: string, ws = workspace) => `/workspaces/${encodeURIComponent(ws)}/media/${sha256}`;

  it('serves a downloaded file with its stored content type, an ETag, immutable caching, nosniff and inline', async () => {
    const response = await get(mediaUrl(files.photo.sha256));
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(files.photo.body)).toBe(true);
    expect(response.headers['content-type']).toBe('image/jpeg');
    expect(response.headers.etag).toBe(`"${files.photo.sha256}"`);
    expect(response.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['content-disposition']).toBe('inline');
    expect(response.headers['content-security-policy']).toBe("default-src 'none'; sandbox");

    const again = await get(mediaUrl(files.photo.sha256), { ...auth, 'if-none-match': `"${files.photo.sha256}"` });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
  });

  it('keeps the files, and the thumbnails it made, in the store the configuration names', async () => {
    await get(`${mediaUrl(files.picture.sha256)}/thumbnail`);
    const { store, dir } = stack.config.media;
    const root = store ? path.join(inject('s3Root'), store.bucket, store.prefix) : dir;
    const digest = files.picture.sha256;
    expect(fs.existsSync(path.join(root, 'sha256', digest.slice(0, 2), digest))).toBe(true);
    expect(fs.existsSync(path.join(root, 'thumbnails', digest.slice(0, 2), `${digest}-w400.webp`))).toBe(true);
    // With a bucket, the media directory holds no file (only downloads under way would be there).
    if (store) expect(fs.existsSync(path.join(dir, 'sha256'))).toBe(false);
  });

  it('serves the byte range a Range header asks for (206), all of it for another version (If-Range), and 416 past its end', async () => {
    const url = mediaUrl(files.photo.sha256);
    const size = files.photo.body.length;
    const part = await get(url, { ...auth, range: 'bytes=100-199' });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-199/${size}`);
    expect(part.headers['content-length']).toBe('100');
    expect(part.headers['accept-ranges']).toBe('bytes');
    expect(part.headers.etag).toBe(`"${files.photo.sha256}"`);
    expect(part.rawPayload.equals(files.photo.body.subarray(100, 200))).toBe(true);
    const tail = await get(url, { ...auth, range: 'bytes=-10' });
    expect(tail.statusCode).toBe(206);
    expect(tail.rawPayload.equals(files.photo.body.subarray(size - 10))).toBe(true);
    const otherVersion = await get(url, { ...auth, range: 'bytes=0-9', 'if-range': '"another"' });
    expect(otherVersion.statusCode).toBe(200);
    expect(otherVersion.rawPayload.equals(files.photo.body)).toBe(true);
    const past = await get(url, { ...auth, range: `bytes=${size}-` });
    expect(past.statusCode).toBe(416);
    expect(past.headers['content-range']).toBe(`bytes */${size}`);
    expect(past.json<ErrorBody>().error.code).toBe('range_not_satisfiable');
  });

  it('serves a file by its signed link without a token, and refuses a wrong or expired signature (403)', async () => {
    const links = mediaLinksFor(stack.config, stack.pool);
    const link = new URL(await links.url(workspace, files.photo.sha256));
    expect(link.pathname).toBe(mediaUrl(files.photo.sha256));
    expect(Number(link.searchParams.get('expires'))).toBe(Math.floor(Date.now() / 1000) + 86_400);
    const signed = await get(`${link.pathname}${link.search}`, {});
    expect(signed.statusCode).toBe(200);
    expect(signed.rawPayload.equals(files.photo.body)).toBe(true);

    const wrong = new URL(link);
    wrong.searchParams.set('sig', `${link.searchParams.get('sig')!.slice(0, -2)}AA`);
    const forged = await get(`${wrong.pathname}${wrong.search}`, {});
    expect(forged.statusCode).toBe(403);
    expect(forged.json<ErrorBody>().error.code).toBe('invalid_signature');
    const later = new URL(link);
    later.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 1));
    expect((await get(`${later.pathname}${later.search}`, {})).json<ErrorBody>().error.code).toBe('invalid_signature');
    // The signature is of this file of this workspace only.
    const elsewhere = await get(`${mediaUrl(files.picture.sha256)}${link.search}`, {});
    expect(elsewhere.json<ErrorBody>().error.code).toBe('invalid_signature');

    const old = new URL(await links.url(workspace, files.photo.sha256, Date.now() - 86_401_000));
    const expired = await get(`${old.pathname}${old.search}`, {});
    expect(expired.statusCode).toBe(403);
    expect(expired.json<ErrorBody>().error.code).toBe('link_expired');
    // A link opens the file only: not its thumbnail, nor any other route.
    expect((await get(`${link.pathname}/thumbnail${link.search}`, {})).statusCode).toBe(401);
    // The logs name the request, never its signature.
    const text = logs.lines.join('');
    expect(text).toContain(`${link.pathname}?expires=${link.searchParams.get('expires')}&sig=[redacted]`);
    expect(text).not.toContain(link.searchParams.get('sig'));
  });

  it('serves a file whose stored type a browser would run (HTML) as a download, never as a page', async () => {
    const response = await get(mediaUrl(files.page.sha256));
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.headers['content-disposition']).toBe('attachment');
  });

  it('answers 404 for a hash that no attachment of that workspace has, even when another workspace has it', async () => {
    const other = await get(mediaUrl(files.photo.sha256, otherWorkspace));
    expect(other.statusCode).toBe(404);
    expect(other.json<ErrorBody>().error.code).toBe('media_not_found');
    expect((await get(mediaUrl('0'.repeat(64)))).statusCode).toBe(404);
    expect((await get(`${mediaUrl(files.photo.sha256, otherWorkspace)}/thumbnail`)).statusCode).toBe(404);
  });

  it('refuse a token outside the workspace (403), a request without one (401) and a malformed hash (400)', async () => {
    for (const url of [mediaUrl(files.photo.sha256), `${mediaUrl(files.photo.sha256)}/thumbnail`]) {
      const foreign = await get(url, { authorization: `Bearer ${otherToken}` });
      expect(foreign.statusCode).toBe(403);
      expect(foreign.json<ErrorBody>().error.code).toBe('workspace_not_allowed');
      const anonymous = await get(url, {});
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json<ErrorBody>().error.code).toBe('missing_token');
    }
    expect((await get(mediaUrl(encodeURIComponent('../../etc/passwd')))).statusCode).toBe(400);
    expect((await get(mediaUrl(files.photo.sha256.toUpperCase()))).statusCode).toBe(400);
  });

  it('serves a WebP thumbnail with an ETag of its own, and an icon for what is not an image or will not decode', async () => {
    const url = `${mediaUrl(files.photo.sha256)}/thumbnail`;
    const first = await get(url);
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toBe('image/webp');
    expect(first.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    expect(first.headers.etag).toBe(`"${files.photo.sha256}-w400"`);
    expect(await sharp(first.rawPayload).metadata()).toMatchObject({ format: 'webp', width: 400, height: 300 });
    expect((await get(url, { ...auth, 'if-none-match': `"${files.photo.sha256}-w400"` })).statusCode).toBe(304);

    const small = await get(`${mediaUrl(files.picture.sha256)}/thumbnail`);
    expect(await sharp(small.rawPayload).metadata()).toMatchObject({ format: 'webp', width: 300, height: 200, hasAlpha: true });

    const text = await get(`${mediaUrl(files.notImage.sha256)}/thumbnail`);
    expect(text.headers['content-type']).toBe('image/svg+xml');
    expect(text.rawPayload.equals(icon('file'))).toBe(true);

    expect(files.bomb.body.length).toBeLessThan(200_000);
    const bomb = await get(`${mediaUrl(files.bomb.sha256)}/thumbnail`);
    expect(bomb.rawPayload.equals(icon('unreadable'))).toBe(true);
    expect(bomb.headers['cache-control']).toBe('no-cache');
  });

  it('sit behind the access plugin with the pages, which answer a browser with pages and a client with JSON', async () => {
    const page = await stack.app.inject({ method: 'GET', url: '/ui', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/ui/sign-in?next=%2Fui');
    // The sign-in page wears the console's stylesheet (carried in the page: the assets need a token), allowed by its digest alone.
    const signIn = await stack.app.inject({ method: 'GET', url: '/ui/sign-in', headers: { accept: 'text/html' } });
    const stylesheet = fs.readFileSync(path.join(path.dirname(templatesDir), 'assets/console.css'), 'utf8');
    expect(signIn.body).toContain(`<style>${stylesheet}</style>`);
    const digest = crypto.createHash('sha256').update(stylesheet).digest('base64');
    expect(signIn.headers['content-security-policy']).toContain(`style-src 'sha256-${digest}';`);
    const albums = await stack.app.inject({ method: 'GET', url: '/ui', headers: { ...auth, accept: 'text/html' } });
    expect(albums.statusCode).toBe(200);
    expect(albums.headers['content-security-policy']).toContain("script-src 'self'");
    const foreignAlbum = `/ui/albums/${encodeURIComponent(workspace)}/p/a/c/x`;
    const refusedPage = await stack.app.inject({
      method: 'GET',
      url: foreignAlbum,
      headers: { authorization: `Bearer ${otherToken}`, accept: 'text/html' },
    });
    expect(refusedPage.statusCode).toBe(403);
    expect(refusedPage.headers['content-type']).toMatch(/^text\/html/);
    expect(refusedPage.body).not.toContain(workspace);
    const refused = await stack.app.inject({ method: 'GET', url: foreignAlbum, headers: { authorization: `Bearer ${otherToken}` } });
    expect(refused.json<ErrorBody>().error.code).toBe('workspace_not_allowed');
    const missing = await stack.app.inject({
      method: 'GET',
      url: `/ui/albums/${encodeURIComponent(workspace)}/p/a/c/x`,
      headers: { ...auth, accept: 'text/html' },
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain('No child of this album was ever stored.');
    expect((await stack.app.inject({ method: 'GET', url: '/ui/assets/console.css' })).statusCode).toBe(401);
    const css = await stack.app.inject({ method: 'GET', url: '/ui/assets/console.css', headers: auth });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);

    const paths = Object.keys(
      (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json<{ paths: Record<string, unknown> }>().paths,
    );
    expect(paths).toEqual(
      expect.arrayContaining(['/workspaces/{workspace}/media/{sha256}', '/workspaces/{workspace}/media/{sha256}/thumbnail']),
    );
    expect(paths.filter((p) => p.startsWith('/ui') && !p.startsWith('/ui/sign-'))).toEqual([]);
  });
});
