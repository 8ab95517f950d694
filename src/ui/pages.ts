import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { albumWorkflowId } from '../domain/keys.js';
import { albumVersion, albumWorkspaces, attachmentDetails } from '../db/console.js';
import { deliveriesOf } from '../db/deliveries.js';
import { getEndpoint, type StoredEndpoint } from '../db/endpoints.js';
import { findErasure } from '../db/erasures.js';
import { countSetAsideMedia } from '../db/media-collector.js';
import type { Pool } from '../db/pool.js';
import { emptyUsage, type UsageReader } from '../db/usage.js';
import { albumStatusFromDatabase, findAlbum, listAlbums } from '../db/status.js';
import { handleError } from '../http/errors.js';
import { HttpError } from '../common/http-error.js';
import { AlbumParams, Segment, albumKeyOf, rowIdPattern } from '../http/params.js';
import { IdentifierString } from '../common/text-schemas.js';
import { wantsPage, type Access } from '../http/access/plugin.js';
import { startErasure } from '../temporal/lifetime.js';
import { albumPageModel } from './album-page.js';
import { eraseConfirmModel, erasurePageModel } from './erasure-page.js';
import { consolePaths } from './paths.js';
import { renderPage, type AlbumListFilters, type AlbumListPage } from './views.js';
import { albumProfileOf } from '../platforms/index.js';

export interface ConsolePagesOptions {
  pool: Pool;
  /** The workspaces' rows and media, as /metrics reads them (at most every 30 s). */
  usage: UsageReader;
  temporalUi: { url: string | undefined; namespace: string };
  /** Where an erasure the album page starts runs: the same start as the API's DELETE. */
  erasures: { temporal: Client; taskQueue: string };
}

const ErasureParams = Type.Object({ workspace: Segment, id: Type.String({ maxLength: 64 }) });

/** How often an erasure's page loads itself again while the erasure runs (a meta refresh: no script). */
const erasureRefreshSeconds = 1;

const pageSize = 50;
/** How often an open album page asks whether it changed. */
const pollMs = 2_000;

const ListQuery = Type.Object({
  workspace: IdentifierString({ maxLength: 512, default: '' }),
  provider: IdentifierString({ maxLength: 512, default: '' }),
  state: Type.Enum(['', 'collecting', 'processed', 'closed'], { default: '' }),
  review: Type.Enum(['', 'yes', 'no'], { default: '' }),
  q: IdentifierString({ maxLength: 512, default: '' }),
  before: Type.Optional(Type.String({ pattern: rowIdPattern })),
});

/** The workspaces the caller's token reaches, as listAlbums takes them; none without a token. */
function reachableWorkspaces(access: Access | null): readonly string[] | 'all' {
  if (access === null) return [];
  return access.workspaces === '*' ? 'all' : [...access.workspaces];
}

export function html(reply: FastifyReply, body: string): FastifyReply {
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);
}

/** The usage of the workspaces the list shows: the one chosen (zeros when it keeps nothing), else each reachable one that keeps rows. */
async function usageInView(
  usage: UsageReader,
  request: FastifyRequest,
  chosen: string,
  reachable: readonly string[] | 'all',
): Promise<AlbumListPage['usage']> {
  let snapshot;
  try {
    snapshot = await usage.read();
  } catch (err) {
    request.log.warn({ err }, 'workspace usage not read');
    return 'unavailable';
  }
  const at = snapshot.at.toISOString();
  if (chosen !== '') {
    const found = snapshot.usage.find((entry) => entry.workspace === chosen);
    return { workspaces: [found ?? emptyUsage(chosen)], at };
  }
  const workspaces = reachable === 'all' ? snapshot.usage : snapshot.usage.filter((entry) => reachable.includes(entry.workspace));
  return { workspaces, at };
}

/** The media objects the store did not delete, for a token that reaches every workspace (the store is theirs together); 0 otherwise. */
async function mediaDeleteFailuresInView(pool: Pool, request: FastifyRequest, reachable: readonly string[] | 'all'): Promise<number> {
  if (reachable !== 'all') return 0;
  try {
    return await countSetAsideMedia(pool);
  } catch (err) {
    request.log.warn({ err }, 'set-aside media objects not counted');
    return 0;
  }
}

/** The albums page, or the review queue: the albums the filters select among those the token reaches, a page at a time. */
async function albumList(
  { pool, usage }: Pick<ConsolePagesOptions, 'pool' | 'usage'>,
  request: FastifyRequest,
  reply: FastifyReply,
  filters: AlbumListFilters,
  before: string | undefined,
  reviewQueue: boolean,
) {
  const reachable = reachableWorkspaces(request.access);
  if (filters.workspace !== '' && reachable !== 'all' && !reachable.includes(filters.workspace)) {
    throw new HttpError(403, 'workspace_not_allowed', 'the token does not reach this workspace');
  }
  // Read beside the list (it is usually the reading /metrics made, so no query at all).
  const usageFigures = reviewQueue ? Promise.resolve(null) : usageInView(usage, request, filters.workspace, reachable);
  const mediaDeleteFailures = reviewQueue ? Promise.resolve(0) : mediaDeleteFailuresInView(pool, request, reachable);
  const rows = await listAlbums(pool, {
    workspaces: filters.workspace !== '' ? [filters.workspace] : reachable,
    ...(filters.state !== '' ? { state: filters.state } : {}),
    ...(reviewQueue || filters.review !== '' ? { review: reviewQueue || filters.review === 'yes' } : {}),
    ...(filters.provider !== '' ? { provider: filters.provider } : {}),
    ...(filters.q !== '' ? { search: filters.q } : {}),
    ...(before !== undefined ? { afterId: before } : {}),
    limit: pageSize + 1,
  });
  const albums = rows.slice(0, pageSize);
  const kept = Object.entries(filters).filter(([, value]) => value !== '');
  const olderUrl =
    rows.length > pageSize
      ? `${reviewQueue ? consolePaths.review : consolePaths.albums}?${new URLSearchParams([...kept, ['before', albums[albums.length - 1]!.id]]).toString()}`
      : null;
  const heading = reviewQueue ? 'Review queue' : 'Albums';
  return html(
    reply,
    renderPage(
      'albums',
      { title: heading, signedIn: true },
      {
        heading,
        reviewQueue,
        filters,
        workspaces: reachable === 'all' ? await albumWorkspaces(pool) : reachable,
        albums,
        olderUrl,
        usage: await usageFigures,
        mediaDeleteFailures: await mediaDeleteFailures,
      },
    ),
  );
}

/**
 * The signed-in pages under `/ui`: albums and the review queue (any token; they list the workspaces
 * it reaches) and one album (a token that reaches its workspace, as the access plugin checks).
 */
/** A browser gets an error page; a script or a client that asked for no HTML, the API's error body. */
export function pageErrors(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply): void {
  const formPost = request.method === 'POST' && (request.headers.accept ?? '').includes('text/html');
  if (!wantsPage(request) && !formPost) return handleError(error, request, reply);
  if (error instanceof HttpError) void reply.headers(error.headers);
  // An HttpError (a 503 while PostgreSQL is unreachable, too) says what happened; any other 5xx is a 500.
  const meant = error instanceof HttpError || (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500);
  const status = meant && error.statusCode !== undefined ? error.statusCode : 500;
  if (status === 500) request.log.error({ err: error }, 'console page failed');
  const message = status === 500 ? 'Something went wrong on the server; its log says what.' : error.message;
  void html(reply.code(status), renderPage('error', { title: String(status), signedIn: request.access !== null }, { status, message }));
}

/** Where the album's notifications went: to its workspace's endpoints, and (for a `*` token) the environment endpoint. */
async function deliveriesShown(pool: Pool, workflowId: string, access: Access | null) {
  const everyDelivery = await deliveriesOf(pool, workflowId);
  const endpoints = new Map<string, StoredEndpoint>();
  for (const id of new Set(everyDelivery.map((delivery) => delivery.endpointId))) {
    const endpoint = await getEndpoint(pool, id);
    if (endpoint && (endpoint.workspace !== null || access?.workspaces === '*')) endpoints.set(id, endpoint);
  }
  return { views: everyDelivery.filter((delivery) => endpoints.has(delivery.endpointId)), endpoints };
}

export const consolePages: FastifyPluginAsyncTypebox<ConsolePagesOptions> = async (app, { pool, usage, temporalUi, erasures }) => {
  // The erase form posts as HTML forms do.
  await app.register(formbody);
  // A browser gets an error page; a script or a client that asked for no HTML, the API's error body.
  app.setErrorHandler(pageErrors);

  app.get('/', { schema: { hide: true, querystring: ListQuery }, config: { access: 'signed-in' } }, async (request, reply) => {
    const { before, ...filters } = request.query;
    return albumList({ pool, usage }, request, reply, filters, before, false);
  });

  app.get('/review', { schema: { hide: true, querystring: ListQuery }, config: { access: 'signed-in' } }, async (request, reply) => {
    const { before, ...filters } = request.query;
    return albumList({ pool, usage }, request, reply, { ...filters, review: '' }, before, true);
  });

  app.get(
    '/albums/:workspace/:provider/:account/:conversation/:album',
    { schema: { hide: true, params: AlbumParams } },
    async (request, reply) => {
      const key = albumKeyOf(request.params);
      const album = await findAlbum(pool, key);
      if (!album) throw new HttpError(404, 'album_not_found', 'No child of this album was ever stored.');
      // The version is read first: a change after it makes the next poll fetch the page again.
      const version = await albumVersion(pool, album.workflowId);
      const [status, details] = await Promise.all([
        albumStatusFromDatabase(pool, album, key, { childOrder: albumProfileOf(album.source).childOrder }),
        attachmentDetails(pool, album.id),
      ]);
      const model = albumPageModel({
        album: status,
        details,
        version: version?.version ?? '',
        pollMs,
        temporalUi,
        deliveries: await deliveriesShown(pool, album.workflowId, request.access),
      });
      return html(reply, renderPage('album', { title: `Album ${key.albumId}`, signedIn: true }, model));
    },
  );

  // Erasing an album: the form's first post shows what goes and asks for a confirmation (and erases nothing);
  // the confirmed post starts the erasure and leads to its progress. The access plugin refuses a
  // cookie-signed post from another origin (CSRF), as for every console form.
  app.post(
    '/albums/:workspace/:provider/:account/:conversation/:album/erase',
    { schema: { hide: true, params: AlbumParams } },
    async (request, reply) => {
      const key = albumKeyOf(request.params);
      const album = await findAlbum(pool, key);
      if (!album) throw new HttpError(404, 'album_not_found', 'No child of this album is stored: there is nothing to erase.');
      const body = request.body as { confirm?: unknown } | null | undefined;
      if (body?.confirm !== 'yes') {
        const status = await albumStatusFromDatabase(pool, album, key, { childOrder: albumProfileOf(album.source).childOrder });
        return html(reply, renderPage('erase', { title: `Erase album ${key.albumId}`, signedIn: true }, eraseConfirmModel(status)));
      }
      const subject = { scope: 'album' as const, key };
      const receipt = await startErasure(pool, erasures.temporal, erasures.taskQueue, subject, request.access?.tokenName ?? 'unknown');
      return reply.redirect(consolePaths.erasure(key.workspace, receipt.id), 303);
    },
  );

  app.get('/erasures/:workspace/:id', { schema: { hide: true, params: ErasureParams } }, async (request, reply) => {
    const receipt = await findErasure(pool, request.params.workspace, request.params.id);
    if (!receipt) throw new HttpError(404, 'erasure_not_found', 'No erasure with this id in this workspace.');
    const frame = {
      title: `Erasure ${receipt.id}`,
      signedIn: true,
      ...(receipt.state === 'running' ? { refreshSeconds: erasureRefreshSeconds } : {}),
    };
    return html(reply, renderPage('erasure', frame, erasurePageModel(receipt)));
  });

  // For the page's script: JSON, with the API's error bodies rather than an HTML page.
  await app.register(async (scope) => {
    const json = scope.withTypeProvider<TypeBoxTypeProvider>();
    json.setErrorHandler(handleError);
    json.get(
      '/albums/:workspace/:provider/:account/:conversation/:album/version',
      { schema: { hide: true, params: AlbumParams } },
      async (request, reply) => {
        const key = albumKeyOf(request.params);
        const version = await albumVersion(pool, albumWorkflowId(key));
        if (!version) throw new HttpError(404, 'album_not_found', 'no child of this album was ever stored');
        return reply.header('cache-control', 'no-store').send(version);
      },
    );
  });
};
