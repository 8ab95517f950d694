import path from 'node:path';
import helmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { Client } from '@temporalio/client';
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../common/config.js';
import type { Pool } from '../db/pool.js';
import type { UsageReader } from '../db/usage.js';
import type { MediaStore } from '../media/store.js';
import { mediaRoutes } from './media-routes.js';
import { consolePages } from './pages.js';
import { consolePaths } from './paths.js';
import { createThumbnailer } from './thumbnails.js';
import { templatesDir } from './views.js';
import { tenantsPage } from './tenants-page.js';
import type { TenantRegistry } from '../tenants/registry.js';
import type { EndpointManager } from '../delivery/manage.js';
import { endpointsPage } from './endpoints-page.js';

export interface ConsoleOptions {
  config: Pick<Config, 'temporal'>;
  pool: Pool;
  tenants: TenantRegistry;
  store: MediaStore;
  /** The workspaces' rows and media, shown on the albums list. */
  usage: UsageReader;
  /** Starts the erasures the album page asks for. */
  temporal: Client;
  /** Outbound delivery's endpoints, for their pages and the forms that change them. */
  endpoints: EndpointManager;
}

const assetsDir = path.join(path.dirname(templatesDir), 'assets');

/**
 * The console (docs/console.md): the pages under `/ui` (and `/`, which leads there) and the media routes
 * `/workspaces/:ws/media/:sha256[/thumbnail]`, with a strict Content-Security-Policy (no inline
 * script or style, nothing from another origin). Registered behind the access plugin: the lists
 * and the assets need any valid token, the album pages and the media one that reaches their
 * workspace (the sign-in pages are the access plugin's).
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
  await app.register(async (assets) => {
    // Only the signed-in pages use them (the sign-in page is the access plugin's, without them).
    assets.addHook('onRoute', (route) => {
      route.config = { access: 'signed-in', ...route.config };
    });
    await assets.register(fastifyStatic, { root: assetsDir, prefix: consolePaths.assets, decorateReply: false, index: false });
  });

  // `/` is where people type the address: it leads to the albums (behind sign-in, like every page).
  app.get('/', { schema: { hide: true }, config: { access: 'signed-in' } }, (_request, reply) => reply.redirect(consolePaths.albums, 302));

  const thumbnailer = createThumbnailer(options.store, app.log);
  await app.register(consolePages, {
    prefix: consolePaths.albums,
    pool: options.pool,
    usage: options.usage,
    temporalUi: { url: options.config.temporal.uiUrl, namespace: options.config.temporal.namespace },
    erasures: { temporal: options.temporal, taskQueue: options.config.temporal.taskQueue },
  });
  await app.register(tenantsPage, { prefix: consolePaths.tenants, pool: options.pool, tenants: options.tenants });
  await app.register(endpointsPage, { prefix: consolePaths.endpoints, endpoints: options.endpoints });
  await app.register(mediaRoutes, { pool: options.pool, store: options.store, thumbnailer, iconsDir: path.join(assetsDir, 'icons') });
};
