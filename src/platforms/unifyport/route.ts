import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../common/config.js';
import { verifySignature, type VerifyFailure } from '../../common/signature.js';
import { unstorableTextProblem } from '../../domain/storable-text.js';
import type { WorkspaceEntry } from '../../tenants/registry.js';
import { webhookRoute } from '../webhook-route.js';
import { parseEvent } from './parse.js';

export const timestampHeader = 'x-unifyport-timestamp';
export const signatureHeaderName = 'x-unifyport-signature';

const Accepted = Type.Object(
  {
    status: Type.Literal('accepted'),
    duplicate: Type.Boolean({ description: 'The child was already stored (a redelivery)' }),
    childKey: Type.String({ description: '<ws>:<provider>:<account>:<conversation>:<message>, each part URL-encoded' }),
    albumKey: Type.Union([Type.String(), Type.Null()], { description: 'null for a standalone message' }),
  },
  { description: 'The child is committed (new or redelivered)' },
);

const Ignored = Type.Object(
  {
    status: Type.Literal('ignored'),
    reason: Type.Optional(Type.Literal('erased', { description: 'The child was erased on request: acknowledged, not stored again' })),
  },
  { description: 'A verified event of another type (recorded), or a redelivery of an erased child (not stored)' },
);

const signatureFailures: Record<VerifyFailure, (toleranceS: number) => string> = {
  missing_signature: () => `the ${timestampHeader} and ${signatureHeaderName} headers are required`,
  invalid_timestamp: () => `${timestampHeader} must be unix seconds`,
  stale_timestamp: (s) => `${timestampHeader} is more than ${s} s in the past`,
  future_timestamp: (s) => `${timestampHeader} is more than ${s} s in the future`,
  invalid_signature: () => `no v1= entry of ${signatureHeaderName} matches the body`,
};

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * `POST /webhooks/unifyport/:workspace`: verifies the raw body, stores the child in a transaction shared
 * with concurrent requests (group commit) and answers 202 only after that commit.
 */
export const unifyportRoute = (config: Config) =>
  webhookRoute<{ workspace: string }, WorkspaceEntry>({
    url: '/webhooks/unifyport/:workspace',
    schema: {
      summary: 'Receive a UnifyPort event',
      description:
        'Body: the UnifyPort event as `application/json`, at most MAX_BODY_BYTES. Unless the workspace is one of ' +
        `WORKSPACE_SECRETS with no secret, \`${signatureHeaderName}: v1=<hex>\` with hex = HMAC-SHA256(secret, "<timestamp>.<raw body>") ` +
        `and \`${timestampHeader}\` (unix seconds) are required. 202 means the child is committed. ` +
        '503 with Retry-After: the database is unavailable, or too many events are waiting to be stored.',
      params: Type.Object({ workspace: Type.String({ description: 'A workspace of WORKSPACE_SECRETS or of the admin API' }) }),
      headers: Type.Object({
        [timestampHeader]: Type.Optional(Type.String({ description: 'Unix seconds' })),
        [signatureHeaderName]: Type.Optional(Type.String({ description: 'One or more v1=<hex> entries' })),
      }),
      response: { 202: Type.Union([Accepted, Ignored]) },
    },
    find: (tenants, { workspace }) => tenants.workspace(workspace),
    unknown: ({ workspace }) => ({ code: 'unknown_workspace', message: `workspace "${workspace}" is not configured` }),
    signsBody: true,
    verify: (workspace, request, body) => {
      if (workspace.acceptsUnsigned) return undefined;
      const verdict = verifySignature({
        secrets: workspace.secrets.map(({ secret }) => secret),
        timestamp: headerValue(request, timestampHeader),
        signature: headerValue(request, signatureHeaderName),
        body: body!,
        toleranceS: config.signatureToleranceS,
      });
      if (verdict.ok) return undefined;
      // Only a secret this process may not know yet is worth a fresher look.
      const { reason } = verdict;
      return { code: reason, message: signatureFailures[reason](config.signatureToleranceS), mayBeNew: reason === 'invalid_signature' };
    },
    unstorable: { code: 'unstorable_event', message: `the event holds text PostgreSQL cannot store (${unstorableTextProblem})` },
    async receive({ request, reply, workspace, body, store, quarantine, count, batcher }) {
      const event = parseEvent(workspace, body);
      if (event.kind === 'rejected') return quarantine(event.code, event.message);

      const raw = body.toString('utf8');
      if (event.kind === 'ignored') {
        await store(() => batcher.recordEvent({ workspace, source: 'unifyport', eventId: event.eventId, type: event.type, raw }));
        count('ignored');
        return reply.code(202).send({ status: 'ignored' as const });
      }

      const stored = await store(() =>
        batcher.storeChild({ source: 'unifyport', eventId: event.eventId, type: event.type, raw, child: event.child }),
      );
      if (stored.erased) {
        count('erased');
        return reply.code(202).send({ status: 'ignored' as const, reason: 'erased' as const });
      }
      count(stored.duplicate ? 'duplicate' : 'accepted');
      request.log.debug({ childKey: stored.childKey, albumKey: stored.albumKey, duplicate: stored.duplicate }, 'child stored');
      const { duplicate, childKey, albumKey } = stored;
      return reply.code(202).send({ status: 'accepted' as const, duplicate, childKey, albumKey });
    },
  });
