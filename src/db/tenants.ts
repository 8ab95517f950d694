// The tenants kept in PostgreSQL (migrations/1765600000000_tenants.sql): workspaces, signing secrets, API
// tokens, Telegram bots, LINE channels and the audit of their changes, and the last use of the environment's
// tokens (migrations/1766200000000_environment-token-uses.sql). Secrets come and go sealed (Buffer); opening
// them is the registry's (src/tenants/registry.ts).
import type { Pool, PoolClient, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** What the processes LISTEN on: every change of the tenant tables notifies it (a statement trigger). */
export const tenantsChannel = 'albumflow_tenants';

export interface StoredWorkspace {
  name: string;
  createdAt: Date;
}
export interface StoredSecret {
  id: string;
  workspace: string;
  sealed: Buffer;
  createdAt: Date;
}
export interface StoredToken {
  id: string;
  name: string;
  digest: Buffer;
  workspaces: string[];
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}
export interface StoredBot {
  workspace: string;
  name: string;
  botId: string;
  sealedToken: Buffer;
  sealedSecretToken: Buffer;
  createdAt: Date;
}
export interface StoredChannel {
  workspace: string;
  name: string;
  sealedChannelSecret: Buffer;
  sealedChannelAccessToken: Buffer;
  createdAt: Date;
}

/** The last use of a token of the environment (API_TOKENS, or the generated admin token), by its digest. */
export interface StoredTokenUse {
  digest: Buffer;
  lastUsedAt: Date;
}

export interface StoredTenants {
  workspaces: StoredWorkspace[];
  secrets: StoredSecret[];
  tokens: StoredToken[];
  bots: StoredBot[];
  channels: StoredChannel[];
  environmentTokenUses: StoredTokenUse[];
}

const bytes = (base64: string) => Buffer.from(base64, 'base64');
const date = (text: string) => new Date(text);
const maybeDate = (text: string | null) => (text === null ? null : new Date(text));

/** Every tenant row, in one statement (one snapshot of the tables), ordered by creation. */
export async function loadTenants(db: Queryable): Promise<StoredTenants> {
  const { rows } = await db.query<{ tenants: Record<keyof StoredTenants, Array<Record<string, unknown>>> }>(
    `SELECT json_build_object(
       'workspaces', (SELECT coalesce(json_agg(json_build_object('name', name, 'createdAt', created_at) ORDER BY created_at, name), '[]')
                      FROM workspaces),
       'secrets', (SELECT coalesce(json_agg(json_build_object('id', id, 'workspace', workspace, 'sealed', encode(secret, 'base64'),
                                                              'createdAt', created_at) ORDER BY created_at, id), '[]')
                   FROM workspace_secrets),
       'tokens', (SELECT coalesce(json_agg(json_build_object('id', id, 'name', name, 'digest', encode(digest, 'base64'),
                                                             'workspaces', workspaces, 'expiresAt', expires_at, 'createdAt', created_at,
                                                             'lastUsedAt', last_used_at) ORDER BY created_at, id), '[]')
                  FROM api_tokens),
       'bots', (SELECT coalesce(json_agg(json_build_object('workspace', workspace, 'name', name, 'botId', bot_id,
                                                           'token', encode(token, 'base64'), 'secretToken', encode(secret_token, 'base64'),
                                                           'createdAt', created_at) ORDER BY created_at, workspace, name), '[]')
                FROM telegram_bots),
       'channels', (SELECT coalesce(json_agg(json_build_object('workspace', workspace, 'name', name,
                                                               'channelSecret', encode(channel_secret, 'base64'),
                                                               'channelAccessToken', encode(channel_access_token, 'base64'),
                                                               'createdAt', created_at) ORDER BY created_at, workspace, name), '[]')
                    FROM line_channels),
       'environmentTokenUses', (SELECT coalesce(json_agg(json_build_object('digest', encode(digest, 'base64'),
                                                                           'lastUsedAt', last_used_at)), '[]')
                                FROM environment_token_uses)
     ) AS tenants`,
  );
  const t = rows[0]!.tenants;
  return {
    workspaces: t.workspaces.map((w) => ({ name: w.name as string, createdAt: date(w.createdAt as string) })),
    secrets: t.secrets.map((s) => ({
      id: s.id as string,
      workspace: s.workspace as string,
      sealed: bytes(s.sealed as string),
      createdAt: date(s.createdAt as string),
    })),
    tokens: t.tokens.map((k) => ({
      id: k.id as string,
      name: k.name as string,
      digest: bytes(k.digest as string),
      workspaces: k.workspaces as string[],
      expiresAt: maybeDate(k.expiresAt as string | null),
      createdAt: date(k.createdAt as string),
      lastUsedAt: maybeDate(k.lastUsedAt as string | null),
    })),
    bots: t.bots.map((b) => ({
      workspace: b.workspace as string,
      name: b.name as string,
      botId: b.botId as string,
      sealedToken: bytes(b.token as string),
      sealedSecretToken: bytes(b.secretToken as string),
      createdAt: date(b.createdAt as string),
    })),
    channels: t.channels.map((c) => ({
      workspace: c.workspace as string,
      name: c.name as string,
      sealedChannelSecret: bytes(c.channelSecret as string),
      sealedChannelAccessToken: bytes(c.channelAccessToken as string),
      createdAt: date(c.createdAt as string),
    })),
    environmentTokenUses: t.environmentTokenUses.map((u) => ({
      digest: bytes(u.digest as string),
      lastUsedAt: date(u.lastUsedAt as string),
    })),
  };
}

/** Who made an admin change, and what it was (never a value): a row of admin_audit. */
export interface AuditEntry {
  tokenName: string;
  tokenHash: string;
  action: string;
  subject: string;
}

export interface StoredAuditEntry extends AuditEntry {
  id: string;
  at: Date;
}

/**
 * Runs one admin change and records it in the same transaction: the change is audited exactly when it
 * commits. `change` answers undefined when there was nothing to change (an unknown name): nothing is recorded.
 */
export async function auditedChange<T>(
  pool: Pool,
  audit: AuditEntry,
  change: (client: PoolClient) => Promise<T | undefined>,
): Promise<T | undefined> {
  return withTransaction(pool, async (client) => {
    const result = await change(client);
    if (result === undefined) return undefined;
    await insertAudit(client, audit);
    return result;
  });
}

/** Records an admin change: what auditedChange does once its change is made, and what a change that makes another calls for that one. */
export async function insertAudit(db: Queryable, audit: AuditEntry): Promise<void> {
  await db.query(`INSERT INTO admin_audit (token_name, token_hash, action, subject) VALUES ($1, $2, $3, $4)`, [
    audit.tokenName,
    audit.tokenHash,
    audit.action,
    audit.subject,
  ]);
}

/** The newest audit entries first; `before`: entries older than that id (the next page). */
export async function listAudit(db: Queryable, { limit, before }: { limit: number; before?: string }): Promise<StoredAuditEntry[]> {
  const { rows } = await db.query<{ id: string; at: Date; token_name: string; token_hash: string; action: string; subject: string }>(
    `SELECT id::text, at, token_name, token_hash, action, subject FROM admin_audit
     WHERE $2::bigint IS NULL OR id < $2::bigint ORDER BY id DESC LIMIT $1`,
    [limit, before ?? null],
  );
  return rows.map((r) => ({ id: r.id, at: r.at, tokenName: r.token_name, tokenHash: r.token_hash, action: r.action, subject: r.subject }));
}

/** The PostgreSQL error of a unique key violated: a name taken. */
export function isNameTaken(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '23505';
}

export async function insertWorkspace(db: Queryable, name: string): Promise<StoredWorkspace> {
  const { rows } = await db.query<{ created_at: Date }>(`INSERT INTO workspaces (name) VALUES ($1) RETURNING created_at`, [name]);
  return { name, createdAt: rows[0]!.created_at };
}

/** The statements that end the console sessions and sign-in codes of the tokens in `revoked` (name, digest). */
const endSessionsOfRevoked = `sessions AS (DELETE FROM console_sessions WHERE token_digest IN (SELECT digest FROM revoked)),
     codes AS (DELETE FROM console_sign_in_codes WHERE token_digest IN (SELECT digest FROM revoked))`;

/**
 * Deletes the workspace and takes it out of every token's scope: a token left with no workspace is deleted,
 * with the console sessions and sign-in codes it opened. Answers the names of the tokens deleted, or
 * undefined when there is no such workspace. Two statements: the second reads after the first got its row,
 * so it sees a token committed by a createToken that held the row (lockWorkspaces) until then.
 */
export async function deleteWorkspace(db: Queryable, name: string): Promise<{ revokedTokens: string[] } | undefined> {
  const { rowCount } = await db.query(`DELETE FROM workspaces WHERE name = $1`, [name]);
  if (!rowCount) return undefined;
  const { rows } = await db.query<{ name: string }>(
    `WITH narrowed AS (UPDATE api_tokens SET workspaces = array_remove(workspaces, $1)
                        WHERE $1 = ANY (workspaces) AND array_remove(workspaces, $1) <> '{}'),
     revoked AS (DELETE FROM api_tokens WHERE $1 = ANY (workspaces) AND array_remove(workspaces, $1) = '{}' RETURNING name, digest),
     ${endSessionsOfRevoked}
     SELECT name FROM revoked ORDER BY name`,
    [name],
  );
  return { revokedTokens: rows.map((row) => row.name) };
}

/**
 * The workspaces of the table among `names`, each locked until the transaction ends (FOR KEY SHARE): a
 * removal of one waits until then, and then sees what the transaction stored naming it.
 */
export async function lockWorkspaces(db: Queryable, names: readonly string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ name: string }>(`SELECT name FROM workspaces WHERE name = ANY ($1::text[]) FOR KEY SHARE`, [
    [...names],
  ]);
  return new Set(rows.map((row) => row.name));
}

/** Undefined when the workspace is not in the table. */
export async function insertSecret(db: Queryable, workspace: string, sealed: (id: string) => Buffer): Promise<StoredSecret | undefined> {
  // The id is chosen first: it is part of what the sealed value is bound to.
  const { rows: ids } = await db.query<{ id: string }>(`SELECT gen_random_uuid()::text AS id`);
  const id = ids[0]!.id;
  const value = sealed(id);
  const { rows } = await db.query<{ created_at: Date }>(
    `INSERT INTO workspace_secrets (id, workspace, secret) SELECT $1, name, $3 FROM workspaces WHERE name = $2 RETURNING created_at`,
    [id, workspace, value],
  );
  return rows[0] ? { id, workspace, sealed: value, createdAt: rows[0].created_at } : undefined;
}

export async function deleteSecret(db: Queryable, workspace: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM workspace_secrets WHERE workspace = $1 AND id::text = $2`, [workspace, id]);
  return (rowCount ?? 0) > 0;
}

export async function insertToken(
  db: Queryable,
  token: { name: string; digest: Buffer; workspaces: string[]; expiresAt: Date | null },
): Promise<StoredToken> {
  const { rows } = await db.query<{ id: string; created_at: Date }>(
    `INSERT INTO api_tokens (name, digest, workspaces, expires_at) VALUES ($1, $2, $3, $4) RETURNING id::text, created_at`,
    [token.name, token.digest, token.workspaces, token.expiresAt],
  );
  return { ...token, id: rows[0]!.id, createdAt: rows[0]!.created_at, lastUsedAt: null };
}

/** Deletes the token and every console session and sign-in code it opened; false when there is no such token. */
export async function deleteToken(db: Queryable, id: string): Promise<StoredToken | undefined> {
  const { rows } = await db.query<{ name: string; digest: Buffer }>(
    `WITH revoked AS (DELETE FROM api_tokens WHERE id::text = $1 RETURNING name, digest),
     ${endSessionsOfRevoked}
     SELECT name, digest FROM revoked`,
    [id],
  );
  const row = rows[0];
  return row
    ? { id, name: row.name, digest: row.digest, workspaces: [], expiresAt: null, createdAt: new Date(0), lastUsedAt: null }
    : undefined;
}

/** Records that these tokens were used (now): those of the table by id, those of the environment by digest. */
export async function touchTokens(
  db: Queryable,
  { ids, environmentDigests }: { ids: string[]; environmentDigests: Buffer[] },
): Promise<void> {
  if (ids.length > 0) await db.query(`UPDATE api_tokens SET last_used_at = now() WHERE id::text = ANY ($1::text[])`, [ids]);
  if (environmentDigests.length > 0)
    await db.query(
      `INSERT INTO environment_token_uses (digest, last_used_at) SELECT unnest($1::bytea[]), now()
       ON CONFLICT (digest) DO UPDATE SET last_used_at = excluded.last_used_at`,
      [environmentDigests],
    );
}

export async function insertBot(
  db: Queryable,
  bot: { workspace: string; name: string; botId: string; sealedToken: Buffer; sealedSecretToken: Buffer },
): Promise<StoredBot | undefined> {
  const { rows } = await db.query<{ created_at: Date }>(
    `INSERT INTO telegram_bots (workspace, name, bot_id, token, secret_token)
     SELECT name, $2, $3, $4, $5 FROM workspaces WHERE name = $1 RETURNING created_at`,
    [bot.workspace, bot.name, bot.botId, bot.sealedToken, bot.sealedSecretToken],
  );
  return rows[0] ? { ...bot, createdAt: rows[0].created_at } : undefined;
}

export async function deleteBot(db: Queryable, workspace: string, name: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM telegram_bots WHERE workspace = $1 AND name = $2`, [workspace, name]);
  return (rowCount ?? 0) > 0;
}

export async function insertChannel(
  db: Queryable,
  channel: { workspace: string; name: string; sealedChannelSecret: Buffer; sealedChannelAccessToken: Buffer },
): Promise<StoredChannel | undefined> {
  const { rows } = await db.query<{ created_at: Date }>(
    `INSERT INTO line_channels (workspace, name, channel_secret, channel_access_token)
     SELECT name, $2, $3, $4 FROM workspaces WHERE name = $1 RETURNING created_at`,
    [channel.workspace, channel.name, channel.sealedChannelSecret, channel.sealedChannelAccessToken],
  );
  return rows[0] ? { ...channel, createdAt: rows[0].created_at } : undefined;
}

export async function deleteChannel(db: Queryable, workspace: string, name: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM line_channels WHERE workspace = $1 AND name = $2`, [workspace, name]);
  return (rowCount ?? 0) > 0;
}

/**
 * What a sealed value is bound to (its AES-GCM additional data): its table, column and row, so that a
 * value copied into another place does not open there.
 */
export function sealedPlace(table: SealedValue['table'], column: string, key: readonly string[]): string {
  return JSON.stringify([table, column, ...key]);
}

/** One sealed column value of a tenant table, for a rekey: where it is, and what it is bound to. */
export interface SealedValue {
  table: 'workspace_secrets' | 'telegram_bots' | 'line_channels';
  column: string;
  /** The row's key, as the UPDATE names it. */
  key: string[];
  sealed: Buffer;
}

const sealedColumns = {
  workspace_secrets: { key: ['id'], columns: ['secret'] },
  telegram_bots: { key: ['workspace', 'name'], columns: ['token', 'secret_token'] },
  line_channels: { key: ['workspace', 'name'], columns: ['channel_secret', 'channel_access_token'] },
} as const;

/**
 * Re-seals every stored secret in one transaction (rows locked while it runs): `reseal` gets each value
 * with its place and answers the new sealed value, or undefined to leave it. Answers how many changed.
 */
export async function resealAll(pool: Pool, reseal: (value: SealedValue) => Buffer | undefined): Promise<number> {
  return withTransaction(pool, async (client) => {
    let changed = 0;
    for (const [table, { key, columns }] of Object.entries(sealedColumns) as Array<
      [SealedValue['table'], (typeof sealedColumns)[SealedValue['table']]]
    >) {
      const keyList = key.map((k) => `${k}::text`).join(', ');
      const { rows } = await client.query<Record<string, string | Buffer>>(
        `SELECT ${keyList}, ${columns.join(', ')} FROM ${table} FOR UPDATE`,
      );
      for (const row of rows) {
        const keyValues = key.map((k) => row[k] as string);
        for (const column of columns) {
          const next = reseal({ table, column, key: keyValues, sealed: row[column] as Buffer });
          if (next === undefined) continue;
          const where = key.map((k, i) => `${k}::text = $${i + 2}`).join(' AND ');
          await client.query(`UPDATE ${table} SET ${column} = $1 WHERE ${where}`, [next, ...keyValues]);
          changed++;
        }
      }
    }
    return changed;
  });
}
