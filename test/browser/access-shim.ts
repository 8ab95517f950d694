// TEST ONLY — a stand-in for the access plugin of DESIGN.md §8 (issue 17), so that the console can
// be developed and tested before the two are joined. It knows a fixed token table, reads a bearer
// token or a session cookie that holds the token itself (the real plugin keeps no token in a
// cookie), and never refuses: refusing is the console's default when `request.access` is unset.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { consoleReturnPath } from '../../src/ui/paths.js';

/** `{ "<token>": ["<workspace>", …] }`, as API_TOKENS is written. */
export type TestTokens = Record<string, string[]>;

export const testSessionCookie = 'albumflow_test_session';

function presentedToken(request: FastifyRequest): string | undefined {
  const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '');
  if (bearer) return bearer[1];
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === testSessionCookie) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

export function testAccessShim(tokens: TestTokens): FastifyPluginAsync {
  return fp(async (app) => {
    app.addHook('onRequest', async (request) => {
      const token = presentedToken(request);
      const workspaces = token === undefined ? undefined : tokens[token];
      if (workspaces) request.access = { workspaces };
    });

    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    app.post<{ Body: { token?: string; next?: string } }>('/ui/sign-in', async (request, reply) => {
      const token = request.body.token ?? '';
      const next = consoleReturnPath(request.body.next);
      if (!tokens[token]) return reply.redirect(`/ui/sign-in?${new URLSearchParams({ next, notice: 'invalid_token' }).toString()}`, 303);
      void reply.header('set-cookie', `${testSessionCookie}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict`);
      return reply.redirect(next, 303);
    });

    app.post('/ui/sign-out', async (_request, reply) =>
      reply
        .header('set-cookie', `${testSessionCookie}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`)
        .redirect('/ui/sign-in?notice=signed_out', 303),
    );
  });
}
