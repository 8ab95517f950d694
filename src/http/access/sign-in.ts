import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { HttpError } from '../errors.js';
import { ErrorBodySchema as ErrorBody } from '../schemas.js';
import { consolePath, requestOrigin, signInPath, signOutPath, wantsPage } from './plugin.js';
import { issueSession, sessionCookie, sessionCookiePath, sessionLifetimeS, type SignInCodes } from './session.js';
import { signInPage, signInPageHeaders } from './sign-in-page.js';
import { tokenHash, type TokenEntry, type TokenTable } from './tokens.js';

export interface SignInOptions {
  tokens: TokenTable;
  codes: SignInCodes;
}

const Next = Type.String({ description: 'A path of this server to go to after signing in (default /ui)' });

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

/**
 * Sign-in and sign-out of the console: a token (posted by the sign-in form) or a single-use code (the
 * link the start banner prints) is exchanged for a session cookie; see session.ts for what it holds.
 * The routes are open; a page (HTML) or JSON is answered as the request asks.
 */
export const signInRoutes: FastifyPluginAsyncTypebox<SignInOptions> = async (app, { tokens, codes }) => {
  await app.register(formbody);

  function startSession(request: FastifyRequest, reply: FastifyReply, entry: TokenEntry) {
    const session = issueSession(entry);
    void reply.setCookie(sessionCookie, session.cookie, {
      path: sessionCookiePath,
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      maxAge: sessionLifetimeS,
    });
    return {
      status: 'signed_in' as const,
      tokenHash: entry.hash,
      workspaces: entry.workspaces === '*' ? ['*'] : [...entry.workspaces],
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  function page(reply: FastifyReply, status: number, next: string, message?: string) {
    return reply
      .code(status)
      .headers(signInPageHeaders)
      .send(signInPage({ next, ...(message ? { message } : {}) }));
  }

  app.get(
    signInPath,
    {
      schema: {
        summary: 'The sign-in page, or the exchange of a single-use sign-in code for a session',
        tags: ['console'],
        querystring: Type.Object({
          code: Type.Optional(Type.String({ maxLength: 128, description: 'The code of the link albumflow printed at start' })),
          next: Type.Optional(Next),
        }),
        response: { 200: SignedIn, 401: ErrorBody },
      },
    },
    async (request, reply) => {
      const next = localPath(request.query.next);
      if (request.query.code === undefined) return page(reply, 200, next);
      const entry = codes.redeem(tokens, request.query.code);
      if (!entry) {
        request.log.info({ access: 'invalid_sign_in_code' }, 'access refused');
        const message = 'This sign-in link was already used or has expired.';
        if (wantsPage(request)) return page(reply, 401, next, `${message} Sign in with a token.`);
        throw new HttpError(401, 'invalid_sign_in_code', message);
      }
      const signedIn = startSession(request, reply, entry);
      void reply.header('referrer-policy', 'no-referrer');
      if (wantsPage(request)) return reply.redirect(next, 303);
      return signedIn;
    },
  );

  app.post(
    signInPath,
    {
      schema: {
        summary: 'Sign in to the console with a token: sets the session cookie',
        description: 'A form post (application/x-www-form-urlencoded) is answered with a redirect to `next`; JSON with the session.',
        tags: ['console'],
        body: Type.Object({ token: Type.String({ maxLength: 4096 }), next: Type.Optional(Next) }),
        response: { 200: SignedIn, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      refuseCrossOrigin(request);
      const fromForm = isFormPost(request);
      const next = localPath(request.body.next);
      const presented = request.body.token.trim();
      const entry = tokens.find(presented);
      if (!entry) {
        request.log.info({ access: 'invalid_token', tokenHash: tokenHash(presented) }, 'access refused');
        if (fromForm) return page(reply, 401, next, 'That token is not one albumflow accepts.');
        throw new HttpError(401, 'invalid_token', 'the token is not one albumflow accepts');
      }
      const signedIn = startSession(request, reply, entry);
      if (fromForm) return reply.redirect(next, 303);
      return signedIn;
    },
  );

  app.post(
    signOutPath,
    {
      schema: {
        summary: 'Sign out of the console: removes the session cookie',
        tags: ['console'],
        response: { 204: Type.Null(), 403: ErrorBody },
      },
    },
    async (request, reply) => {
      refuseCrossOrigin(request);
      void reply.clearCookie(sessionCookie, { path: sessionCookiePath });
      if (isFormPost(request)) return reply.redirect(signInPath, 303);
      return reply.code(204).send(null);
    },
  );
};
