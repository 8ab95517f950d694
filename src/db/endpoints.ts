// The endpoints notifications are delivered to and their signing secrets (migrations/1766000000000_outbound-
// delivery.sql). Secrets come and go sealed (Buffer); generating, sealing and opening them is src/delivery's.
import type { NotificationType } from '../domain/types.js';
import type { Pool, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

/** The endpoint NOTIFY_URL declares: it receives every workspace's notifications. */
export const environmentEndpointId = 'ep_environment';

export type EndpointSource = 'environment' | 'database';
/** `gone`: it answered 410; `failing`: five days of failures; `operator`: turned off through the API or the CLI. */
export type DisabledReason = 'gone' | 'failing' | 'operator';

export interface StoredEndpoint {
  id: string;
  /** Null for the environment endpoint. */
  workspace: string | null;
  source: EndpointSource;
  url: string;
  description: string;
  /** Null: every type. */
  types: NotificationType[] | null;
  /** Requests a second at most. */
  rateLimit: number;
  enabled: boolean;
  disabledReason: DisabledReason | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  lastSuccessAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface StoredEndpointSecret {
  id: string;
  sealed: Buffer;
  createdAt: Date;
  /** Null: the current secret. */
  expiresAt: Date | null;
}

export interface NewEndpoint {
  id: string;
  workspace: string;
  url: string;
  description: string;
  types: NotificationType[] | null;
  rateLimit: number;
}

/** What a change of an endpoint sets; an absent field stays as it is (`types: null`: every type). */
export interface EndpointChange {
  url?: string;
  description?: string;
  types?: NotificationType[] | null;
  rateLimit?: number;
}

interface EndpointRow {
  id: string;
  workspace: string | null;
  source: EndpointSource;
  url: string;
  description: string;
  types: NotificationType[] | null;
  rate_limit: number;
  enabled: boolean;
  disabled_reason: DisabledReason | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  last_success_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const endpointColumns = `id, workspace, source, url, description, types, rate_limit, enabled, disabled_reason, disabled_at,
  failing_since, last_success_at, created_at, updated_at`;

function endpointOf(row: EndpointRow): StoredEndpoint {
  return {
    id: row.id,
    workspace: row.workspace,
    source: row.source,
    url: row.url,
    description: row.description,
    types: row.types,
    rateLimit: row.rate_limit,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    failingSince: row.failing_since,
    lastSuccessAt: row.last_success_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * What a sealed secret is bound to: the format of sealedPlace (src/db/tenants.ts), whose table type does not
 * list endpoint_secrets yet.
 */
export function endpointSecretPlace(endpointId: string, secretId: string): string {
  return JSON.stringify(['endpoint_secrets', 'secret', endpointId, secretId]);
}

/** Inserts the endpoint with its first secret, in one statement. */
export async function insertEndpoint(
  db: Queryable,
  endpoint: NewEndpoint,
  secret: { id: string; sealed: Buffer },
): Promise<StoredEndpoint> {
  const { rows } = await db.query<EndpointRow>(
    `WITH added AS (
       INSERT INTO endpoints (id, workspace, source, url, description, types, rate_limit)
       VALUES ($1, $2, 'database', $3, $4, $5, $6)
       RETURNING ${endpointColumns}
     ), secret AS (
       INSERT INTO endpoint_secrets (endpoint_id, id, secret) SELECT id, $7, $8 FROM added
     )
     SELECT * FROM added`,
    [endpoint.id, endpoint.workspace, endpoint.url, endpoint.description, endpoint.types, endpoint.rateLimit, secret.id, secret.sealed],
  );
  return endpointOf(rows[0]!);
}

/** The workspace's endpoints, oldest first (the environment endpoint is not one of them). */
export async function listEndpoints(db: Queryable, workspace: string): Promise<StoredEndpoint[]> {
  const { rows } = await db.query<EndpointRow>(`SELECT ${endpointColumns} FROM endpoints WHERE workspace = $1 ORDER BY created_at, id`, [
    workspace,
  ]);
  return rows.map(endpointOf);
}

/** Every endpoint: the environment endpoint first, then each workspace's, oldest first. */
export async function listEveryEndpoint(db: Queryable): Promise<StoredEndpoint[]> {
  const { rows } = await db.query<EndpointRow>(`SELECT ${endpointColumns} FROM endpoints ORDER BY workspace NULLS FIRST, created_at, id`);
  return rows.map(endpointOf);
}

export async function getEndpoint(db: Queryable, id: string): Promise<StoredEndpoint | undefined> {
  const { rows } = await db.query<EndpointRow>(`SELECT ${endpointColumns} FROM endpoints WHERE id = $1`, [id]);
  return rows[0] && endpointOf(rows[0]);
}

export async function updateEndpoint(db: Queryable, id: string, change: EndpointChange): Promise<StoredEndpoint | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints
        SET url = COALESCE($2, url),
            description = COALESCE($3, description),
            types = CASE WHEN $5 THEN $4::text[] ELSE types END,
            rate_limit = COALESCE($6, rate_limit),
            updated_at = now()
      WHERE id = $1
      RETURNING ${endpointColumns}`,
    [id, change.url ?? null, change.description ?? null, change.types ?? null, change.types !== undefined, change.rateLimit ?? null],
  );
  return rows[0] && endpointOf(rows[0]);
}

/**
 * Turns the endpoint on or off with its deliveries, in one round trip (the switch_endpoint function): off holds
 * its pending deliveries (a disabled endpoint keeps the reason it was disabled for first), on makes the held
 * ones due at once, each on a new schedule, in their order, and forgets the failures before. The function
 * waits for the notifications being recorded for the endpoint and makes the next ones wait for it, so that
 * none is queued in the state of before.
 */
export async function switchEndpoint(
  db: Queryable,
  id: string,
  to: { enabled: true } | { enabled: false; reason: DisabledReason },
): Promise<StoredEndpoint | undefined> {
  const { rows } = await db.query<EndpointRow>(`SELECT ${endpointColumns} FROM switch_endpoint($1, $2, $3)`, [
    id,
    to.enabled,
    to.enabled ? null : to.reason,
  ]);
  return rows[0] && endpointOf(rows[0]);
}

/** Removes the endpoint with its secrets, its deliveries and their attempts. */
export async function deleteEndpoint(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM endpoints WHERE id = $1`, [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * Adds a new current secret; the current ones keep signing beside it for `overlapMs`, and the ones expired by
 * now go. False when there is no such endpoint.
 */
export async function rotateEndpointSecret(
  db: Queryable,
  endpointId: string,
  secret: { id: string; sealed: Buffer },
  overlapMs: number,
): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `WITH endpoint AS (
       SELECT id FROM endpoints WHERE id = $1 FOR UPDATE
     ), expired AS (
       DELETE FROM endpoint_secrets WHERE endpoint_id IN (SELECT id FROM endpoint) AND expires_at <= now()
     ), retiring AS (
       UPDATE endpoint_secrets SET expires_at = now() + $4::float8 * interval '1 millisecond'
        WHERE endpoint_id IN (SELECT id FROM endpoint) AND expires_at IS NULL
     )
     INSERT INTO endpoint_secrets (endpoint_id, id, secret) SELECT id, $2, $3 FROM endpoint RETURNING id`,
    [endpointId, secret.id, secret.sealed, overlapMs],
  );
  return rows.length > 0;
}

/** The secrets that sign now, the current one first. */
export async function signingEndpointSecrets(db: Queryable, endpointId: string): Promise<StoredEndpointSecret[]> {
  const { rows } = await db.query<{ id: string; secret: Buffer; created_at: Date; expires_at: Date | null }>(
    `SELECT id, secret, created_at, expires_at FROM endpoint_secrets
      WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > now())
      ORDER BY expires_at DESC NULLS FIRST, created_at DESC`,
    [endpointId],
  );
  return rows.map((row) => ({ id: row.id, sealed: row.secret, createdAt: row.created_at, expiresAt: row.expires_at }));
}

/**
 * The environment endpoint as NOTIFY_URL says: its URL set (enabled or not, as it was), or, with no URL,
 * removed with its deliveries.
 */
export async function declareEnvironmentEndpoint(db: Queryable, url: string | undefined): Promise<void> {
  if (url === undefined) {
    await db.query(`DELETE FROM endpoints WHERE id = $1`, [environmentEndpointId]);
    return;
  }
  await db.query(
    `INSERT INTO endpoints (id, workspace, source, url, description) VALUES ($1, NULL, 'environment', $2, 'NOTIFY_URL')
     ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, updated_at = now() WHERE endpoints.url <> EXCLUDED.url`,
    [environmentEndpointId, url],
  );
}

/**
 * Re-seals every endpoint secret in one transaction: `reseal` gets each sealed value with its place and
 * answers the new sealed value, or undefined to leave it (what `albumflow secrets rekey` does to the tenants'
 * secrets). Answers how many changed.
 */
export async function resealEndpointSecrets(pool: Pool, reseal: (sealed: Buffer, place: string) => Buffer | undefined): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ endpoint_id: string; id: string; secret: Buffer }>(
      `SELECT endpoint_id, id, secret FROM endpoint_secrets FOR UPDATE`,
    );
    let changed = 0;
    for (const row of rows) {
      const next = reseal(row.secret, endpointSecretPlace(row.endpoint_id, row.id));
      if (next === undefined) continue;
      await client.query(`UPDATE endpoint_secrets SET secret = $3 WHERE endpoint_id = $1 AND id = $2`, [row.endpoint_id, row.id, next]);
      changed++;
    }
    return changed;
  });
}
