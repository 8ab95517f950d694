import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { mediaPath } from '../common/paths.js';
import { findWorkspaceMedia } from '../db/media.js';
import type { Pool } from '../db/pool.js';
import { HttpError } from '../http/errors.js';
import { Segment } from '../http/params.js';
import { ErrorBodySchema as ErrorBody } from '../http/schemas.js';
import type { IconName, Thumbnailer } from './thumbnails.js';

export interface MediaRoutesOptions {
  pool: Pool;
  mediaDir: string;
  thumbnailer: Thumbnailer;
  iconsDir: string;
}

const Params = Type.Object({
  workspace: Segment,
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the file, lowercase hex' }),
});

/**
 * Types a browser shows without running anything: served as stored, inline. Any other stored type
 * (HTML, SVG, PDF, none…) is served as a download, so a sender cannot make a page of the console's
 * origin out of a file.
 */
const inlineType = /^(image\/(jpeg|png|gif|webp|avif|heic|heif|bmp)|video\/[a-z0-9.+-]+|audio\/[a-z0-9.+-]+)$/;

function servedAs(stored: string | null): { type: string; disposition: 'inline' | 'attachment' } {
  const essence = stored?.split(';')[0]!.trim().toLowerCase() ?? '';
  return inlineType.test(essence)
    ? { type: essence, disposition: 'inline' }
    : { type: 'application/octet-stream', disposition: 'attachment' };
}

/** Content-addressed: a URL's bytes never change, so browsers keep them (privately: they are behind a token). */
function immutable(reply: FastifyReply, etag: string): FastifyReply {
  return (
    reply
      .header('etag', etag)
      .header('cache-control', 'private, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      // Opened on its own, a file is a document with no script, no plugin and an origin of its own.
      .header('content-security-policy', "default-src 'none'; sandbox")
  );
}

function mediaSchema(summary: string, description: string) {
  return {
    summary,
    description,
    tags: ['media'],
    params: Params,
    response: {
      200: Type.Unknown({ description: 'the file' }),
      304: Type.Null({ description: 'not modified (If-None-Match)' }),
      400: ErrorBody,
      401: ErrorBody,
      403: ErrorBody,
      404: ErrorBody,
    },
  };
}

function notModified(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  return header !== undefined && header.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*');
}

/** `GET /workspaces/:ws/media/:sha256` and its thumbnail (docs/console.md). */
export const mediaRoutes: FastifyPluginAsyncTypebox<MediaRoutesOptions> = async (app, { pool, mediaDir, thumbnailer, iconsDir }) => {
  // Before the first download, so the file server has its root.
  fs.mkdirSync(mediaDir, { recursive: true });
  await app.register(fastifyStatic, { root: mediaDir, serve: false });
  const icons = new Map<IconName, Buffer>(
    (['video', 'audio', 'image', 'file', 'unreadable'] as const).map((name) => [name, fs.readFileSync(path.join(iconsDir, `${name}.svg`))]),
  );

  // The access plugin has checked that the caller's token reaches `workspace`.
  async function storedMedia(workspace: string, sha256: string) {
    const media = await findWorkspaceMedia(pool, workspace, sha256);
    if (!media) throw new HttpError(404, 'media_not_found', 'no downloaded attachment of this workspace has that hash');
    return media;
  }

  const missingFile = () => new HttpError(404, 'media_not_found', 'the file is no longer in MEDIA_DIR');

  /** Sends a file of MEDIA_DIR with the headers set here, not those @fastify/static would derive from its name. */
  const sendStored = (reply: FastifyReply, file: string, type: string) =>
    reply
      .type(type)
      .sendFile(path.relative(mediaDir, file), mediaDir, { contentType: false, etag: false, lastModified: false, cacheControl: false });

  app.get(
    '/workspaces/:workspace/media/:sha256',
    {
      schema: mediaSchema(
        'A downloaded attachment file',
        'Served with the content type its server sent (as a download when a browser could run it), an ETag and immutable caching.',
      ),
    },
    async (request, reply) => {
      const { workspace, sha256 } = request.params;
      const media = await storedMedia(workspace, sha256);
      const etag = `"${sha256}"`;
      immutable(reply, etag);
      if (notModified(request, etag)) return reply.code(304).send(null);
      const file = mediaPath(mediaDir, sha256);
      if (!fs.existsSync(file)) throw missingFile();
      const { type, disposition } = servedAs(media.contentType);
      return sendStored(reply.header('content-disposition', disposition), file, type);
    },
  );

  app.get(
    '/workspaces/:workspace/media/:sha256/thumbnail',
    {
      schema: mediaSchema(
        'A thumbnail of a downloaded attachment',
        'WebP for the image formats albumflow decodes (JPEG, PNG, WebP, GIF, AVIF, told by their bytes); an SVG icon for anything else.',
      ),
    },
    async (request, reply) => {
      const { workspace, sha256 } = request.params;
      await storedMedia(workspace, sha256);
      const etag = `"${sha256}-${thumbnailer.variant}"`;
      immutable(reply, etag).header('content-disposition', 'inline');
      if (notModified(request, etag)) return reply.code(304).send(null);
      const thumbnail = await thumbnailer.thumbnail(sha256);
      if (!thumbnail) throw missingFile();
      if ('file' in thumbnail) return sendStored(reply, thumbnail.file, 'image/webp');
      // A file that could not be decoded may decode after a restart (memory, file handles): not kept.
      if (thumbnail.icon === 'unreadable') void reply.header('cache-control', 'no-cache');
      return reply.type('image/svg+xml').send(icons.get(thumbnail.icon));
    },
  );
};
