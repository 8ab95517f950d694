import cookie from '@fastify/cookie';
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { HttpError } from '../../common/http-error.js';
import { ErrorBodySchema as ErrorBody } from '../../common/http-error.js';
import { sessionCookie, sessionCookiePath, type ConsoleSessions } from './session.js';
import { bearerTokenOf } from '../../common/bearer-token.js';
import { reaches, tokenHash, type TokenEntry, type Tokens } from '../../tenants/tokens.js';
import type { MediaLinks } from '../../media/links.js';

/**
 * Who may call a route, set as `config.access` (routes registered inside a plugin passed to
 * `markRoutesOpen` default to `open`; every other route defaults to `workspace`):
 * - `open`: anyone (the webhooks have their own signatures; health, /docs, sign-in);
 * - `workspace`: a token that reaches the route's `:workspace` parameter (a route without one is refused);
 * - `signed-in`: any valid token; the route narrows what it shows with `request.access`;
 * - `all-workspaces`: only a `["*"]` token (/metrics);
 * - `workspace-or-link`: like `workspace`, or, with `expires` and `sig` in the query, no token but a
 *   signature of this file that has not expired (a notification's `media_url`; src/media/links.ts).
 */
export type RouteAccess = 'open' | 'workspace' | 'signed-in' | 'all-workspaces' | 'workspace-or-link';

/** The caller's token, as the routes see it: its short hash and scope, never the token itself. */
export interface Access {
  tokenHash: string;
  /** What the audit calls the token (never the token). */
  tokenName: string;
  /** `*` reaches every workspace. */
  workspaces: '*' | ReadonlySet<string>;
  via: 'bearer' | 'session';
}

export interface RouteAccessEntry {
  method: string;
  url: string;
  access: RouteAccess;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /** The caller's scope on routes that need a token; null on open routes. */
    access: Access | null;
  }
  interface FastifyInstance {
    /** Every route registered so far with who may call it. */
    routeAccess(): RouteAccessEntry[];
  }
}

export const consolePath = '/ui';
export const signInPath = '/ui/sign-in';
export const signOutPath = '/ui/sign-out';

export interface AccessOptions {
  tokens: Tokens;
  sessions: ConsoleSessions;
  /** Checks the signed links of `workspace-or-link` routes. */
  links: MediaLinks;
}

function accessOf(config: FastifyContextConfig | undefined): RouteAccess {
  return config?.access ?? 'workspace';
}

/** Routes registered in `instance` (and the plugins it registers) are open unless they say otherwise. */
export function markRoutesOpen(instance: FastifyInstance): void {
  instance.addHook('onRoute', (route) => {
    route.config = { access: 'open', ...route.config };
  });
}

/** A browser navigating to a page, as opposed to a script or a command-line client. */
export function wantsPage(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}

/**
 * Where a browser says a request comes from. `Sec-Fetch-Site` is the precise answer of current
 * browsers; without it, the `Origin` host is compared with `Host` (the scheme is left out, so a
 * TLS-terminating proxy in front does not make every request cross-origin). `unknown`: neither
 * header, as from curl or the CLI.
 */
export function requestOrigin(request: FastifyRequest): 'same' | 'cross' | 'unknown' {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' ? 'same' : 'cross';
  const origin = request.headers.origin;
  if (origin === undefined) return 'unknown';
  try {
    const from = new URL(origin);
    // Parsed with the origin's scheme, so that `Host: example.com:443` equals `https://example.com`.
    return from.host === new URL(`${from.protocol}//${request.host}`).host ? 'same' : 'cross';
  } catch {
    return 'cross';
  }
}

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);
const challenge = 'Bearer realm="albumflow"';

type Credential = { kind: 'none' } | { kind: 'malformed' } | { kind: 'bearer'; token: string } | { kind: 'session'; value: string };

function credentialOf(request: FastifyRequest): Credential {
  let headers = 0;
  for (let i = 0; i < request.raw.rawHeaders.length; i += 2) {
    if (request.raw.rawHeaders[i]?.toLowerCase() === 'authorization') headers++;
  }
  if (headers > 1) return { kind: 'malformed' };
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const token = bearerTokenOf(authorization);
    return token === undefined ? { kind: 'malformed' } : { kind: 'bearer', token };
  }
  const session = request.cookies?.[sessionCookie];
  return session ? { kind: 'session', value: session } : { kind: 'none' };
}

/**
 * Access control for every route: bearer tokens (or the console's session cookie) checked in an
 * `onRequest` hook at the root, so no route can be registered past it; see `RouteAccess`.
 */
export const accessControl = fp<AccessOptions>(
  async (app, { tokens, sessions, links }) => {
    await app.register(cookie, { hook: 'onRequest' });
    app.decorateRequest('access', null);

    // The method and URL as registered (Fastify reuses one options object for `/docs` and `/docs/`);
    // the access as decided by every onRoute hook, including those of open blocks that run after this one.
    const routes: Array<{ methods: string[]; url: string; route: RouteOptions }> = [];
    app.addHook('onRoute', (route) => void routes.push({ methods: [route.method].flat(), url: route.url, route }));
    app.decorate('routeAccess', () =>
      routes.flatMap(({ methods, url, route }) => methods.map((method) => ({ method, url, access: accessOf(route.config) }))),
    );

    function refuse(
      request: FastifyRequest,
      reply: FastifyReply,
      status: 401 | 403,
      code: string,
      message: string,
      hash?: string,
    ): FastifyReply {
      request.log.info({ access: code, ...(hash === undefined ? {} : { tokenHash: hash }) }, 'access refused');
      if (status === 401 && wantsPage(request)) {
        return reply.redirect(`${signInPath}?next=${encodeURIComponent(request.url)}`, 303);
      }
      const error = status === 401 ? (code === 'missing_token' ? '' : ', error="invalid_token"') : ', error="insufficient_scope"';
      throw new HttpError(status, code, message, { 'www-authenticate': `${challenge}${error}` });
    }

    /** A signed link stands in for a token: valid, the request goes on without one; wrong or expired, 403. */
    async function checkLink(request: FastifyRequest, query: { expires?: unknown; sig?: unknown }): Promise<void> {
      const { workspace, sha256 } = (request.params ?? {}) as Record<string, unknown>;
      const verdict = typeof workspace === 'string' && typeof sha256 === 'string' ? await links.check(workspace, sha256, query) : 'invalid';
      if (verdict === 'valid') {
        request.log = request.log.child({ access: 'signed-link' });
        return;
      }
      request.log.info({ access: verdict === 'expired' ? 'link_expired' : 'invalid_signature' }, 'access refused');
      if (verdict === 'expired') throw new HttpError(403, 'link_expired', 'the link has expired; ask for the album again for a new one');
      throw new HttpError(403, 'invalid_signature', 'the link’s signature is not one albumflow made for this file');
    }

    app.addHook('onRequest', async (request, reply) => {
      const access = accessOf(request.routeOptions.config);
      if (request.is404 || access === 'open') return;
      if (access === 'workspace-or-link') {
        const query = (request.query ?? {}) as { expires?: unknown; sig?: unknown };
        if (query.expires !== undefined || query.sig !== undefined) return checkLink(request, query);
      }

      const credential = credentialOf(request);
      let entry: TokenEntry | undefined;
      switch (credential.kind) {
        case 'none':
          return refuse(
            request,
            reply,
            401,
            'missing_token',
            'send Authorization: Bearer <token> (a token of API_TOKENS, or the admin token)',
          );
        case 'malformed':
          return refuse(request, reply, 401, 'invalid_token', 'send exactly one Authorization header: Bearer <token>');
        case 'bearer':
          entry = await tokens.find(() => tokens.current().find(credential.token));
          if (!entry)
            return refuse(request, reply, 401, 'invalid_token', 'the token is not one albumflow accepts', tokenHash(credential.token));
          break;
        case 'session':
          entry = await sessions.verify(tokens.current(), credential.value);
          if (!entry) {
            void reply.clearCookie(sessionCookie, { path: sessionCookiePath });
            return refuse(
              request,
              reply,
              401,
              'invalid_token',
              'the session has ended (signed out or expired) or its token was removed; sign in again',
            );
          }
          if (!safeMethods.has(request.method) && requestOrigin(request) !== 'same') {
            return refuse(
              request,
              reply,
              403,
              'cross_origin_request',
              'a request signed in by cookie must come from albumflow’s own pages',
              entry.hash,
            );
          }
          break;
      }

      if (access === 'all-workspaces' && entry.workspaces !== '*') {
        return refuse(
          request,
          reply,
          403,
          'workspace_not_allowed',
          'this route needs a token that reaches every workspace ("*")',
          entry.hash,
        );
      }
      if (access === 'workspace' || access === 'workspace-or-link') {
        const workspace = (request.params as Record<string, unknown> | undefined)?.workspace;
        if (typeof workspace !== 'string') {
          return refuse(request, reply, 403, 'workspace_not_allowed', 'this route names no workspace and is open to no token', entry.hash);
        }
        if (!reaches(entry, workspace))
          return refuse(request, reply, 403, 'workspace_not_allowed', 'the token does not reach this workspace', entry.hash);
      }

      tokens.used?.(entry);
      request.access = {
        tokenHash: entry.hash,
        tokenName: entry.name,
        workspaces: entry.workspaces,
        via: credential.kind === 'bearer' ? 'bearer' : 'session',
      };
      request.log = request.log.child({ tokenHash: entry.hash });
      reply.log = request.log;
    });
  },
  { name: 'albumflow-access' },
);

export const securitySchemes = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'A token of API_TOKENS; without API_TOKENS, the admin token albumflow generated in DATA_DIR/admin-token',
  },
  session: { type: 'apiKey', in: 'cookie', name: sessionCookie, description: 'The console session, from POST /ui/sign-in' },
} as const;

/** The OpenAPI operation of a route: the security schemes and refusals of a protected one. */
export function documentAccess({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema;
  url: string;
} {
  if (accessOf(route.config) === 'open') return { schema, url };
  const response = { ...(schema?.response as Record<string, unknown> | undefined), 401: ErrorBody, 403: ErrorBody };
  return { url, schema: { ...schema, security: [{ bearer: [] }, { session: [] }], response } };
}
