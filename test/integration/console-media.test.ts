import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../src/http/schemas.js';
import { templatesDir } from '../../src/ui/views.js';
import { unique } from '../helpers/env.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { settled, testAlbum } from '../browser/albums.js';
import { consoleApp } from '../browser/console-server.js';
import { jpeg, png, pngBomb, startMediaServer, type MediaServer } from '../browser/media-files.js';

const iconsDir = path.join(path.dirname(templatesDir), 'assets/icons');
const icon = (name: string) => fs.readFileSync(path.join(iconsDir, `${name}.svg`));

describe('media routes', () => {
  let stack: Stack;
  let media: MediaServer;
  let app: FastifyInstance;
  const logLines: string[] = [];
  const token = 'media-test-token';
  const otherToken = 'other-workspace-token';
  const otherWorkspace = unique('ws-other');
  const files = {} as Record<'photo' | 'picture' | 'notImage' | 'page' | 'bomb', { body: Buffer; sha256: string }>;
  const auth = { authorization: `Bearer ${token}` };

  beforeAll(async () => {
    stack = await startStack({ QUIET_PERIOD_MS: '200' });
    media = await startMediaServer();
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logLines.push(chunk.toString());
          done();
        },
      }),
    );
    app = await consoleApp(stack, { [token]: [stack.workspace, otherWorkspace], [otherToken]: [otherWorkspace] }, { logger });

    const bodies = {
      photo: { body: await jpeg(1600, 1200, 30), type: 'image/jpeg; charset=binary' },
      picture: { body: await png(300, 200, 210), type: 'image/png' },
      notImage: { body: Buffer.from('just text, whatever the server says it is'), type: 'image/jpeg' },
      page: { body: Buffer.from('<html><script>alert(1)</script></html>'), type: 'text/html' },
      bomb: { body: await pngBomb(30_000), type: 'image/png' },
    };
    const album = testAlbum(stack, unique('alb'));
    const names = Object.keys(bodies) as (keyof typeof bodies)[];
    for (const [index, name] of names.entries()) {
      const { body, type } = bodies[name];
      await album.send({ messageId: name, index, total: names.length, attachments: [{ type: 'image', url: media.file(body, type), mime_type: type }] });
    }
    const status = await album.until((s) => {
      settled(s);
      expect(s.media.downloaded).toBe(names.length);
    });
    for (const child of status.children) files[child.messageId as keyof typeof files] = { body: bodies[child.messageId as keyof typeof bodies].body, sha256: child.attachments[0]!.sha256! };
  });

  afterAll(async () => {
    await app?.close();
    await media?.close();
    await stack?.close();
  });

  const get = (url: string, headers: Record<string, string> = auth) => app.inject({ method: 'GET', url, headers });
  const mediaUrl = (sha256: string, workspace = stack.workspace) => `/workspaces/${encodeURIComponent(workspace)}/media/${sha256}`;

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

  it('refuses a token outside the workspace (403), a request without one (401) and a malformed hash (400)', async () => {
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

  it('are refused to everyone in the app as buildApp wires it, until an access plugin says who is asking', async () => {
    const file = await stack.app.inject({ method: 'GET', url: mediaUrl(files.photo.sha256), headers: auth });
    expect(file.statusCode).toBe(401);
    const page = await stack.app.inject({ method: 'GET', url: '/ui' });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/ui/sign-in?next=%2Fui');
    const signIn = await stack.app.inject({ method: 'GET', url: '/ui/sign-in' });
    expect(signIn.statusCode).toBe(200);
    expect(signIn.headers['content-security-policy']).toContain("script-src 'self'");
    const paths = Object.keys((await stack.app.inject({ method: 'GET', url: '/docs/json' })).json<{ paths: Record<string, unknown> }>().paths);
    expect(paths).toEqual(expect.arrayContaining(['/workspaces/{workspace}/media/{sha256}', '/workspaces/{workspace}/media/{sha256}/thumbnail']));
    expect(paths.filter((p) => p.startsWith('/ui'))).toEqual([]);
  });

  it('makes a WebP thumbnail once, content-addressed, and serves it with its own ETag', async () => {
    const url = `${mediaUrl(files.photo.sha256)}/thumbnail`;
    const first = await get(url);
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toBe('image/webp');
    expect(first.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    expect(first.headers.etag).toBe(`"${files.photo.sha256}-w400"`);
    const metadata = await sharp(first.rawPayload).metadata();
    expect(metadata).toMatchObject({ format: 'webp', width: 400, height: 300 });

    const stored = path.join(stack.config.media.dir, 'thumbnails', files.photo.sha256.slice(0, 2), `${files.photo.sha256}-w400.webp`);
    const madeAt = fs.statSync(stored).mtimeMs;
    const second = await get(url);
    expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(fs.statSync(stored).mtimeMs).toBe(madeAt);
    expect((await get(url, { ...auth, 'if-none-match': `"${files.photo.sha256}-w400"` })).statusCode).toBe(304);

    const small = await get(`${mediaUrl(files.picture.sha256)}/thumbnail`);
    expect(await sharp(small.rawPayload).metadata()).toMatchObject({ format: 'webp', width: 300, height: 200, hasAlpha: true });
  });

  it('gives a file that is not an image an icon without decoding it, whatever type its server claimed', async () => {
    const response = await get(`${mediaUrl(files.notImage.sha256)}/thumbnail`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('image/svg+xml');
    expect(response.rawPayload.equals(icon('file'))).toBe(true);
    expect(logLines.join('')).not.toContain(files.notImage.sha256);
  });

  it('refuses to decode a 30,000 × 30,000 PNG (a decompression bomb) and shows the unreadable icon', async () => {
    expect(files.bomb.body.length).toBeLessThan(200_000);
    const response = await get(`${mediaUrl(files.bomb.sha256)}/thumbnail`);
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(icon('unreadable'))).toBe(true);
    expect(response.headers['cache-control']).toBe('no-cache');
    const warning = logLines.find((line) => line.includes(files.bomb.sha256));
    expect(warning).toMatch(/pixel limit/);
  });
});
