import path from 'node:path';
import helmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyPluginCallback } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import { mediaRoutes } from './media-routes.js';
import { consolePages } from './pages.js';
import { consoleReturnPath } from './paths.js';
import { createThumbnailer } from './thumbnails.js';
import { renderPage, renderSignIn, templatesDir } from './views.js';

export interface ConsoleOptions {
  config: Pick<Config, 'media' | 'temporal'>;
  pool: Pool;
  /**
   * The access plugin of DESIGN.md §8, registered in front of every page and media route (not the
   * sign-in pages and assets). It sets `request.access`; wrap it with fastify-plugin so that its
   * hooks reach those routes. Without it they refuse every request.
   */
  access?: FastifyPluginAsync | FastifyPluginCallback;
  /** How often an open album page asks whether it changed (ms). */
  pollMs?: number;
}

const assetsDir = path.join(path.dirname(templatesDir), 'assets');

const SignInQuery = Type.Object({
  next: Type.Optional(Type.String({ maxLength: 2048 })),
  notice: Type.Optional(Type.Enum(['invalid_token', 'signed_out'])),
});

/** What anyone may load: the sign-in and sign-out pages and the console's CSS, script and icons. */
const publicPages: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(fastifyStatic, { root: assetsDir, prefix: '/assets/', decorateReply: false, index: false });

  app.get('/sign-in', { schema: { hide: true, querystring: SignInQuery } }, async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(renderSignIn({ next: consoleReturnPath(request.query.next), notice: request.query.notice ?? null })),
  );
  app.get('/sign-out', { schema: { hide: true } }, async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(renderPage('sign-out', { title: 'Sign out', signedIn: false }, {})),
  );
};

/**
 * The console (DESIGN.md §10): the pages under `/ui` and the media routes
 * `/workspaces/:ws/media/:sha256[/thumbnail]`, with a strict Content-Security-Policy (no inline
 * script or style, nothing from another origin).
 */
export const consolePlugin: FastifyPluginAsync<ConsoleOptions> = async (app, options) => {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'"],
        mediaSrc: ["'self'"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
  });
  await app.register(publicPages, { prefix: '/ui' });

  const mediaDir = options.config.media.dir;
  const thumbnailer = createThumbnailer(mediaDir, app.log);
  await app.register(async (signedIn) => {
    if (options.access) await signedIn.register(options.access);
    await signedIn.register(consolePages, {
      prefix: '/ui',
      pool: options.pool,
      temporalUi: { url: options.config.temporal.uiUrl, namespace: options.config.temporal.namespace },
      pollMs: options.pollMs ?? 2_000,
    });
    await signedIn.register(mediaRoutes, { pool: options.pool, mediaDir, thumbnailer, iconsDir: path.join(assetsDir, 'icons') });
  });
};

