// The keys albumflow signs its own links with (migrations/1765700000000_signing-keys.sql).
import crypto from 'node:crypto';
import type { Queryable } from './pool.js';

/** The key named `name`: made now (32 random bytes) when no process made it yet; every process reads the same one. */
export async function signingKey(db: Queryable, name: string): Promise<Buffer> {
  const { rows } = await db.query<{ secret: Buffer }>(
    `WITH made AS (
       INSERT INTO signing_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING secret
     )
     SELECT secret FROM made UNION ALL SELECT secret FROM signing_keys WHERE name = $1
     LIMIT 1`,
    [name, crypto.randomBytes(32)],
  );
  const row = rows[0];
  if (!row) throw new Error(`the signing key ${name} could not be read`);
  return row.secret;
}
