import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { handleError } from '../errors.js';
import { HttpError } from '../../common/http-error.js';
import { ErrorBodySchema as ErrorBody } from '../../common/http-error.js';
import { consolePath, requestOrigin, signInPath, signOutPath, wantsPage } from './plugin.js';
import { sessionCookie, sessionCookiePath, type ConsoleSessions, type Session } from './session.js';
import { signInCodePage, signInPage, signInPageHeaders } from './sign-in-page.js';
import { tokenHash, type Tokens } from '../../tenants/tokens.js';

export interface SignInOptions {
  tokens: Tokens;
  sessions: ConsoleSessions;
}

const Next = Type.String({ description: 'A path of this server to go to after signing in (default /ui)' });
const Code = Type.String({ maxLength: 128, description: 'The code of the sign-in link albumflow printed at start' });

const SignedIn = Type.Object({
  status: Type.Literal('signed_in'),
  tokenHash: Type.String({ description: 'The short hash albumflow logs for this token' }),
  workspaces: Type.Array(Type.String(), { description: '["*"] for every workspace' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

const maxNextLength = 2048;
/**
 * A path of this server: printable ASCII without space or backslash, starting with one `/` and holding no
 * `//` (so never `//host` or `/\host`), `%` only before two hex digits. Every such string is a valid
 * Location header and resolves to this origin.
 */
const sameSitePath = /^\/(?:[\x21-\x24\x26-\x5b\x5d-\x7e]|%[0-9A-Fa-f]{2})*$/;

/** Where to go after signing in: `next` when it is a same-site path of this server, else the console. */
export function localPath(next: string | undefined): string {
  if (typeof next !== 'string' || next.length > maxNextLength || !sameSitePath.test(next) || next.includes('//')) return consolePath;
  return next;
}

/** A post of an HTML form, answered with a page or a redirect rather than JSON. */
function isFormPost(request: FastifyRequest): boolean {
  return (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
}

function refuseCrossOrigin(request: FastifyRequest): void {
  if (requestOrigin(request) === 'cross') {
    throw new HttpError(403, 'cross_origin_request', 'sign-in and sign-out are taken only from albumflow’s own pages');
  }
}

const usedCode = 'This sign-in link was already used or has expired.';

/**
 * Sign-in and sign-out of the console: a token (posted by the sign-in form) or a single-use code (posted
 * by the page a sign-in link opens) is exchanged for a session cookie; see session.ts for what it holds.
 * A GET or a HEAD never signs in. The routes are open; a page (HTML) or JSON is answered as the request asks.
 */
export const signInRoutes: FastifyPluginAsyncTypebox<SignInOptions> = async (app, { tokens, sessions }) => {
  await app.register(formbody);

  function setSession(request: FastifyRequest, reply: FastifyReply, session: Session) {
    void reply.setCookie(sessionCookie, session.cookie, {
      path: sessionCookiePath,
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      maxAge: sessions.lifetimeS,
    });
    const { entry } = session;
    return {
      status: 'signed_in' as const,
      tokenHash: entry.hash,
      workspaces: entry.workspaces === '*' ? ['*'] : [...entry.workspaces],
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  function page(reply: FastifyReply, status: number, body: string) {
    return reply.code(status).headers(signInPageHeaders).send(body);
  }

  // A browser that cannot be signed in or out now (PostgreSQL unreachable) is told so on a page.
  app.setErrorHandler((error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) => {
    if (!(error instanceof HttpError && error.statusCode === 503 && (wantsPage(request) || isFormPost(request)))) {
      return handleError(error, request, reply);
    }
    const next = localPath((request.query as { next?: string } | undefined)?.next ?? (request.body as { next?: string } | undefined)?.next);
    return page(
      reply.headers(error.headers),
      503,
      signInPage({
        next,
        message: 'albumflow cannot reach its database just now, so it cannot sign you in or out; try again in a moment.',
      }),
    );
  });

  app.get(
    signInPath,
    {
      schema: {
        summary: 'The sign-in page; with the code of a sign-in link, the page whose button exchanges it',
        description: 'Answers HTML. Neither GET nor HEAD uses a code up: POST /ui/sign-in exchanges it.',
        tags: ['console'],
        querystring: Type.Object({ code: Type.Optional(Code), next: Type.Optional(Next) }),
      },
    },
    async (request, reply) => {
      const next = localPath(request.query.next);
      const { code } = request.query;
      if (code === undefined) return page(reply, 200, signInPage({ next }));
      if (!(await sessions.codeIsPending(tokens.current(), code))) {
        request.log.info({ access: 'invalid_sign_in_code' }, 'access refused');
        return page(reply, 401, signInPage({ next, message: `${usedCode} Sign in with a token.` }));
      }
      return page(reply, 200, signInCodePage({ code, next }));
    },
  );

  app.post(
    signInPath,
    {
      schema: {
        summary: 'Sign in to the console with a token or the code of a sign-in link: sets the session cookie',
        description:
          'Exactly one of `token` and `code`. A form post (application/x-www-form-urlencoded) is answered with a redirect to `next`; JSON with the session.',
        tags: ['console'],
        body: Type.Object({ token: Type.Optional(Type.String({ maxLength: 4096 })), code: Type.Optional(Code), next: Type.Optional(Next) }),
        response: { 200: SignedIn, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      refuseCrossOrigin(request);
      const fromForm = isFormPost(request);
      const next = localPath(request.body.next);
      const { token, code } = request.body;
      if ((token === undefined) === (code === undefined)) {
        throw new HttpError(400, 'invalid_request', 'body must have exactly one of token and code');
      }
      let session: Session | undefined;
      if (code !== undefined) {
        session = await sessions.exchangeCode(tokens.current(), code);
        if (!session) {
          request.log.info({ access: 'invalid_sign_in_code' }, 'access refused');
          if (fromForm) return page(reply, 401, signInPage({ next, message: `${usedCode} Sign in with a token.` }));
          throw new HttpError(401, 'invalid_sign_in_code', usedCode);
        }
      } else {
        const presented = token!.trim();
        const entry = await tokens.find(() => tokens.current().find(presented));
        if (!entry) {
          request.log.info({ access: 'invalid_token', tokenHash: tokenHash(presented) }, 'access refused');
          if (fromForm) return page(reply, 401, signInPage({ next, message: 'That token is not one albumflow accepts.' }));
          throw new HttpError(401, 'invalid_token', 'the token is not one albumflow accepts');
        }
        session = await sessions.start(entry);
      }
      const signedIn = setSession(request, reply, session);
      if (fromForm) return reply.redirect(next, 303);
      return signedIn;
    },
  );

  app.post(
    signOutPath,
    {
      schema: {
        summary: 'Sign out of the console: ends the session and removes its cookie',
        tags: ['console'],
        response: { 204: Type.Null(), 403: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      refuseCrossOrigin(request);
      const cookie = request.cookies[sessionCookie];
      if (cookie) await sessions.end(cookie);
      void reply.clearCookie(sessionCookie, { path: sessionCookiePath });
      if (isFormPost(request)) return reply.redirect(signInPath, 303);
      return reply.code(204).send(null);
    },
  );
};
