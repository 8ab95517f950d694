// The bodies of the tenant changes and what the tenant service answers (docs/api.md, "Tenants"): one
// definition for the admin API's validation, serialization and documentation, the console's forms, the
// service's return types and the CLI's reading of the answers.
import { Type, type Static } from 'typebox';
import { botTokenPattern, channelAccessTokenPattern, channelSecretPattern, secretTokenPattern } from '../common/config.js';
import { IdentifierString } from '../common/text-schemas.js';

/** A workspace, bot or channel name: it is a segment of webhook URLs, so letters, digits, `.`, `_` and `-`. */
const namePattern = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';
export const TenantName = (description: string) => IdentifierString({ pattern: namePattern, description });
const Source = Type.Union([Type.Literal('environment'), Type.Literal('database')], {
  description: '`environment`: declared by an environment variable at start, read-only here',
});
const CreatedAt = Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null for an entry of the environment' });

const SecretInfo = Type.Object({ id: Type.String(), source: Source, createdAt: CreatedAt });
export const AddedSecret = Type.Object({ id: Type.String(), createdAt: Type.String({ format: 'date-time' }) });
export type AddedSecret = Static<typeof AddedSecret>;
export const BotInfo = Type.Object({
  name: Type.String(),
  botId: Type.String({ description: 'The number before `:` in the bot token: the account its children are stored under' }),
  source: Source,
  createdAt: CreatedAt,
});
export type BotInfo = Static<typeof BotInfo>;
export const ChannelInfo = Type.Object({ name: Type.String(), source: Source, createdAt: CreatedAt });
export type ChannelInfo = Static<typeof ChannelInfo>;
export const Workspace = Type.Object({
  name: Type.String(),
  source: Source,
  createdAt: CreatedAt,
  unifyport: Type.Boolean({
    description: 'Whether POST /webhooks/unifyport/<name> is served (a workspace of the API, or of WORKSPACE_SECRETS)',
  }),
  secrets: Type.Array(SecretInfo, { description: 'The signing secrets, never their values' }),
  telegramBots: Type.Array(BotInfo),
  lineChannels: Type.Array(ChannelInfo),
});
export type WorkspaceInfo = Static<typeof Workspace>;

export const TokenInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tokenHash: Type.String({ description: 'The short hash albumflow logs for this token' }),
  workspaces: Type.Array(Type.String(), { description: '["*"] for every workspace' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: CreatedAt,
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Recorded every few seconds' }),
  source: Source,
});
export type TokenInfo = Static<typeof TokenInfo>;
export const CreatedToken = Type.Intersect([
  TokenInfo,
  Type.Object({ token: Type.String({ description: 'The token: shown this once only' }) }),
]);
export type CreatedToken = Static<typeof CreatedToken>;

export const AuditEntry = Type.Object({
  id: Type.String(),
  at: Type.String({ format: 'date-time' }),
  tokenName: Type.String({ description: 'The name of the token that made the change' }),
  tokenHash: Type.String(),
  action: Type.String(),
  subject: Type.String(),
});
export type AuditInfo = Static<typeof AuditEntry>;

/** The bodies of the admin API's changes (the console's forms post the same fields). */
export const WorkspaceBody = Type.Object(
  { name: TenantName('The workspace: the last segment of its webhook URL') },
  { additionalProperties: false },
);
export const SecretBody = Type.Object(
  { secret: IdentifierString({ minLength: 16, maxLength: 1024, description: 'The HMAC-SHA256 key the sender signs with' }) },
  { additionalProperties: false },
);
export const TokenBody = Type.Object(
  {
    name: IdentifierString({ minLength: 1, maxLength: 200, description: 'What the audit and the console call it' }),
    workspaces: Type.Array(Type.Union([TenantName('A workspace'), Type.Literal('*')]), {
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
      description: 'The workspaces it reaches; ["*"] for every one (and the admin API)',
    }),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'From then on it is refused' })),
  },
  { additionalProperties: false },
);
export const BotBody = Type.Object(
  {
    name: TenantName('The bot’s name in its webhook URL'),
    token: Type.String({ pattern: botTokenPattern.source, description: 'The bot token as BotFather gives it' }),
    secretToken: Type.String({ pattern: secretTokenPattern.source, description: 'The secret_token given to setWebhook' }),
  },
  { additionalProperties: false },
);
export const ChannelBody = Type.Object(
  {
    name: TenantName('The channel’s name in its webhook URL'),
    channelSecret: Type.String({ pattern: channelSecretPattern.source, description: 'The channel secret (32 hex digits)' }),
    channelAccessToken: Type.String({
      pattern: channelAccessTokenPattern.source,
      description: 'A long-lived channel access token',
    }),
  },
  { additionalProperties: false },
);
