import fs from 'node:fs';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import parseRange from 'range-parser';
import { Type } from 'typebox';
import { findWorkspaceMedia } from '../db/media.js';
import { MediaStoreError, mediaKey, type MediaStore } from '../media/store.js';
import type { Pool } from '../db/pool.js';
import { HttpError } from '../common/http-error.js';
import { Segment } from '../http/params.js';
import { ErrorBodySchema as ErrorBody } from '../common/http-error.js';
import type { IconName, Thumbnailer } from './thumbnails.js';

export interface MediaRoutesOptions {
  pool: Pool;
  store: MediaStore;
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

/** A notification's `media_url` carries these instead of a token (src/media/links.ts). */
const SignedLink = Type.Object({
  expires: Type.Optional(Type.String({ pattern: '^[0-9]{1,12}$', description: 'unix seconds after which the link no longer works' })),
  sig: Type.Optional(Type.String({ maxLength: 100, description: 'the link’s signature' })),
});

function mediaSchema(summary: string, description: string, querystring?: typeof SignedLink) {
  return {
    summary,
    description,
    tags: ['media'],
    params: Params,
    ...(querystring ? { querystring } : {}),
    response: {
      200: Type.Unknown({ description: 'the file' }),
      206: Type.Unknown({ description: 'the byte range the Range header asked for' }),
      304: Type.Null({ description: 'not modified (If-None-Match)' }),
      400: ErrorBody,
      401: ErrorBody,
      403: ErrorBody,
      404: ErrorBody,
      416: ErrorBody,
      503: ErrorBody,
    },
  };
}

function notModified(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  return header !== undefined && header.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*');
}

/**
 * The one range of a `Range: bytes=…` header, when it asks for one that the object has; null to send it
 * all (no header, several ranges, an If-Range for another version); 'unsatisfiable' past its end.
 */
function requestedRange(request: FastifyRequest, bytes: number, etag: string): { start: number; end: number } | null | 'unsatisfiable' {
  const header = request.headers.range;
  if (header === undefined) return null;
  const ifRange = request.headers['if-range'];
  if (ifRange !== undefined && ifRange !== etag) return null;
  const ranges = parseRange(bytes, header, { combine: true });
  if (ranges === -1) return 'unsatisfiable';
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return null;
  return ranges[0]!;
}

/** `GET /workspaces/:ws/media/:sha256` and its thumbnail (docs/console.md), read from the media store. */
export const mediaRoutes: FastifyPluginAsyncTypebox<MediaRoutesOptions> = async (app, { pool, store, thumbnailer, iconsDir }) => {
  const icons = new Map<IconName, Buffer>(
    (['video', 'audio', 'image', 'file', 'unreadable'] as const).map((name) => [name, fs.readFileSync(path.join(iconsDir, `${name}.svg`))]),
  );

  // The access plugin has checked that the caller's token (or the link's signature) reaches `workspace`.
  async function storedMedia(workspace: string, sha256: string) {
    const media = await findWorkspaceMedia(pool, workspace, sha256);
    if (!media) throw new HttpError(404, 'media_not_found', 'no downloaded attachment of this workspace has that hash');
    return media;
  }

  const missingObject = () => new HttpError(404, 'media_not_found', 'the media store does not hold this file');

  /** Reads of the store that fail (it is down, it refuses) answer 503: the file is there, and will be again. */
  async function fromStore<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (err instanceof MediaStoreError) {
        app.log.warn({ error: err.message }, 'the media store failed a read');
        throw new HttpError(503, 'media_store_unavailable', 'the media store does not answer; try again later');
      }
      throw err;
    }
  }

  /** Streams the object `key` (the range asked for) with the headers set here. */
  async function sendObject(request: FastifyRequest, reply: FastifyReply, key: string, type: string, etag: string) {
    const info = await fromStore(() => store.head(key));
    if (!info) throw missingObject();
    const range = requestedRange(request, info.bytes, etag);
    void reply.type(type).header('accept-ranges', 'bytes');
    if (range === 'unsatisfiable') {
      void reply.header('content-range', `bytes */${info.bytes}`);
      throw new HttpError(416, 'range_not_satisfiable', `the file has ${info.bytes} bytes`);
    }
    const body = await fromStore(() => store.read(key, range ?? undefined));
    if (!body) throw missingObject();
    if (range) {
      return reply
        .code(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${info.bytes}`)
        .header('content-length', range.end - range.start + 1)
        .send(body);
    }
    return reply.header('content-length', info.bytes).send(body);
  }

  app.get(
    '/workspaces/:workspace/media/:sha256',
    {
      schema: mediaSchema(
        'A downloaded attachment file',
        'Served with the content type its server sent (as a download when a browser could run it), an ETag, immutable caching and byte ranges. ' +
          'A notification’s `media_url` reaches it without a token: its `expires` and `sig` stand in for one.',
        SignedLink,
      ),
      config: { access: 'workspace-or-link' },
    },
    async (request, reply) => {
      const { workspace, sha256 } = request.params;
      const media = await storedMedia(workspace, sha256);
      const etag = `"${sha256}"`;
      immutable(reply, etag);
      if (notModified(request, etag)) return reply.code(304).send(null);
      const { type, disposition } = servedAs(media.contentType);
      return sendObject(request, reply.header('content-disposition', disposition), mediaKey(sha256), type, etag);
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
      const thumbnail = await fromStore(() => thumbnailer.thumbnail(sha256));
      if (!thumbnail) throw missingObject();
      if ('key' in thumbnail) return sendObject(request, reply, thumbnail.key, 'image/webp', etag);
      // A file that could not be decoded may decode after a restart (memory, file handles): not kept.
      if (thumbnail.icon === 'unreadable') void reply.header('cache-control', 'no-cache');
      return reply.type('image/svg+xml').send(icons.get(thumbnail.icon));
    },
  );
};
