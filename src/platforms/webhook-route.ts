// The skeleton every platform's webhook route follows: find the account the URL names, check the sender's
// proof, parse the raw body, commit, answer. A platform fills in the parts that differ (src/platforms/<p>/route.ts);
// the order of the checks, the 404/401/415 answers and the outcome counted for each request are the same for all.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { signatureFailuresTotal } from '../common/metrics.js';
import { sameTextInConstantTime } from '../common/signature.js';
import type { IngestBatcher } from '../db/ingest-batcher.js';
import { ErrorBodySchema, type HttpError } from '../common/http-error.js';

import type { TenantRegistry } from '../tenants/registry.js';

/** What the webhook routes share (src/platforms/webhooks.ts): one group commit, the outcome each request is counted under, and the 503 and 400 answers. */
export interface Webhooks {
  batcher: IngestBatcher;
  /** Counts the request under this outcome (`accepted`, `ignored`, …) when it is answered. */
  count: (request: FastifyRequest, outcome: string) => void;
  /** An error answer, counted under its code. */
  refuse: (request: FastifyRequest, status: number, code: string, message: string, headers?: Record<string, string>) => HttpError;
  /** Runs `store`, answering 503 when the database cannot take it; a value PostgreSQL refuses (class 22) is quarantined as `unstorable`. */
  store: <T>(request: FastifyRequest, body: Buffer, workspace: string, unstorable: Refusal, store: () => Promise<T>) => Promise<T>;
  /** Stores a verified body that cannot become a child, byte for byte, and answers 400 with `code`. */
  quarantine: (request: FastifyRequest, body: Buffer, workspace: string, code: string, message: string, detail?: string) => Promise<never>;
  /** REPLAY_HORIZON_S in ms: how old an event a platform dates may be and still be stored. */
  replayHorizonMs: number;
}

export interface Refusal {
  code: string;
  message: string;
}

/** Why a sender's proof was not accepted. */
export interface ProofFailure extends Refusal {
  /** A fresher registry may accept it (a secret or token added in another process a moment ago): looked up once more. */
  mayBeNew: boolean;
}

/** What a route's receiving part works with: the verified body and the account it was sent to. */
export interface Received<Account> {
  request: FastifyRequest;
  reply: FastifyReply;
  workspace: string;
  account: Account;
  body: Buffer;
  /** Runs the commit; a value PostgreSQL cannot store quarantines the body as the route's `unstorable`, an outage answers 503. */
  store: <T>(work: () => Promise<T>) => Promise<T>;
  /** Keeps the body in quarantine and answers 400 with `code`. */
  quarantine: (code: string, message: string) => Promise<never>;
  /** The outcome the request is counted under. */
  count: (outcome: string) => void;
  batcher: IngestBatcher;
  /** Ms since the epoch, REPLAY_HORIZON_S before now: an event the platform dates before it is answered and not stored. */
  notBefore: number;
}

export interface WebhookRouteOptions {
  tenants: TenantRegistry;
  webhooks: Webhooks;
}

export interface WebhookRoute<Params extends { workspace: string }, Account> {
  /** `/webhooks/<platform>/:workspace[/…]` */
  url: string;
  schema: {
    summary: string;
    description: string;
    params: TSchema;
    headers: TSchema;
    /** The success answers (`{ 200: … }` or `{ 202: … }`); the error answers are added. */
    response: Record<number, TSchema>;
  };
  /** The account the URL names (a workspace, a bot, a channel) in the registry as it is now. */
  find: (tenants: TenantRegistry, params: Params) => Account | undefined;
  /** The 404 for a URL that names no account. */
  unknown: (params: Params) => Refusal;
  /** The proof covers the body: a body that is not JSON is refused (415) before the proof is checked. */
  signsBody: boolean;
  /** Checks the sender's proof against the account; undefined when it holds. */
  verify: (account: Account, request: FastifyRequest, body: Buffer | undefined) => ProofFailure | undefined;
  /** What a body PostgreSQL cannot store is quarantined as. */
  unstorable: Refusal;
  /** Parses and stores the verified body, and answers. */
  receive: (received: Received<Account>) => Promise<FastifyReply>;
}

/**
 * The accounts a platform's webhooks are addressed to (a Telegram bot, a LINE channel): declared in the
 * environment or added through the admin API, each with the secrets its webhooks are proven with.
 */
export interface AccountKind<Account = unknown> {
  /** The platform's name: its webhooks are `/webhooks/<platform>/<workspace>/<account>`. */
  platform: string;
  /** The URL parameter after the workspace: `bot` in `/webhooks/telegram/:workspace/:bot`. */
  param: string;
  /** What one is called: `bot`. */
  noun: string;
  /** What one is called where the platform must be named too: `Telegram bot`. */
  title: string;
  /** The environment variable that declares them: `TELEGRAM_BOTS`. */
  variable: string;
  /** The admin API's collection: `/admin/workspaces/<ws>/<collection>`. */
  collection: string;
  /** The 404's code for a name the workspace does not have. */
  unknownCode: string;
  lookup: (tenants: TenantRegistry, workspace: string, name: string) => Account | undefined;
}

/** The error answers of every webhook route (refusal, quarantine, body limits, outage). */
const webhookErrorResponses = {
  400: ErrorBodySchema,
  401: ErrorBodySchema,
  404: ErrorBodySchema,
  413: ErrorBodySchema,
  415: ErrorBodySchema,
  500: ErrorBodySchema,
  503: ErrorBodySchema,
};

/** A proof sent as the value of one header (a secret token, a signature), compared in constant time with what it must be. */
export interface HeaderProof<Account> {
  header: string;
  description: string;
  /** The proof covers the body (a signature): a body that is not JSON is refused (415) before it is checked. */
  coversBody: boolean;
  /** What the header must hold for this account (and body, when the proof covers it). */
  expected: (account: Account, body: Buffer | undefined) => string;
  /** Without the header. */
  missing: Refusal;
  /** A header that differs: a fresher registry may accept it (a secret of an account just added in another process). */
  invalid: Refusal;
}

/**
 * The route of a platform whose webhooks are addressed to an account (`/webhooks/<platform>/:workspace/:<param>`),
 * proven in one header, and answered 200 with an empty body once committed (what Telegram and LINE expect).
 */
export function accountWebhookRoute<Account>(
  route: Pick<WebhookRoute<AccountParams, Account>, 'unstorable' | 'receive'> & {
    account: AccountKind<Account>;
    summary: string;
    description: string;
    proof: HeaderProof<Account>;
  },
): FastifyPluginCallbackTypebox<WebhookRouteOptions> {
  const { account, proof } = route;
  return webhookRoute<AccountParams, Account>({
    url: `/webhooks/${account.platform}/:workspace/:${account.param}`,
    schema: {
      summary: route.summary,
      description: route.description,
      params: Type.Object({
        workspace: Type.String({ description: `A workspace of ${account.variable} or of the admin API` }),
        [account.param]: Type.String({
          description: `A ${account.noun} of the workspace (${account.variable}, or added through the admin API)`,
        }),
      }),
      headers: Type.Object({ [proof.header]: Type.Optional(Type.String({ description: proof.description })) }),
      response: { 200: Type.Unknown({ description: 'Committed; the body is empty' }) },
    },
    find: (tenants, params) => account.lookup(tenants, params.workspace, params[account.param]!),
    unknown: (params) => ({
      code: account.unknownCode,
      message: `workspace "${params.workspace}" has no ${account.title} "${params[account.param]}"`,
    }),
    signsBody: proof.coversBody,
    verify: (found, request, body) => {
      const sent = request.headers[proof.header];
      if (typeof sent !== 'string' || sent === '') return { ...proof.missing, mayBeNew: false };
      return sameTextInConstantTime(sent, proof.expected(found, body)) ? undefined : { ...proof.invalid, mayBeNew: true };
    },
    unstorable: route.unstorable,
    receive: route.receive,
  });
}

type AccountParams = { workspace: string } & Record<string, string>;

const unsupportedMediaType: Refusal = { code: 'unsupported_media_type', message: 'the body must be application/json' };

/** A Fastify plugin serving one platform's webhook route the skeleton's way. */
export function webhookRoute<Params extends { workspace: string }, Account>(
  route: WebhookRoute<Params, Account>,
): FastifyPluginCallbackTypebox<WebhookRouteOptions> {
  return (app, { tenants, webhooks }, done) => {
    const refuse = (request: FastifyRequest, { code, message }: Refusal, status: number) => webhooks.refuse(request, status, code, message);
    const paramsOf = (request: FastifyRequest) => request.params as Params;

    /** The account, once its proof holds; a miss or a proof a fresher registry may accept is looked up once more. */
    async function verified(request: FastifyRequest, body: Buffer | undefined): Promise<Account> {
      const params = paramsOf(request);
      let failure: ProofFailure | undefined;
      const account = await tenants.find(() => {
        failure = undefined;
        const found = route.find(tenants, params);
        if (found === undefined) return undefined;
        failure = route.verify(found, request, body);
        return failure?.mayBeNew ? undefined : found;
      });
      if (failure) {
        signatureFailuresTotal.inc({ reason: failure.code });
        throw refuse(request, failure, 401);
      }
      if (account === undefined) throw refuse(request, route.unknown(params), 404);
      return account;
    }

    // The route's schemas are the platform's: the handler's answers are checked by them, not by TypeScript here.
    (app as FastifyInstance).post(
      route.url,
      {
        schema: { ...route.schema, tags: ['ingress'], response: { ...route.schema.response, ...webhookErrorResponses } },
        onRequest: async (request) => {
          const params = paramsOf(request);
          if ((await tenants.find(() => route.find(tenants, params))) !== undefined) return;
          throw refuse(request, route.unknown(params), 404);
        },
      },
      async (request, reply) => {
        const given = Buffer.isBuffer(request.body) ? request.body : undefined;
        if (route.signsBody && !given) throw refuse(request, unsupportedMediaType, 415);
        const account = await verified(request, given);
        if (!given) throw refuse(request, unsupportedMediaType, 415);
        const body = given;
        const { workspace } = paramsOf(request);
        return route.receive({
          request,
          reply,
          workspace,
          account,
          body,
          store: (work) => webhooks.store(request, body, workspace, route.unstorable, work),
          quarantine: (code, message) => webhooks.quarantine(request, body, workspace, code, message),
          count: (outcome) => webhooks.count(request, outcome),
          batcher: webhooks.batcher,
          notBefore: Date.now() - webhooks.replayHorizonMs,
        });
      },
    );
    done();
  };
}
