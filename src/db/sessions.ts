// The console's sessions and the codes of sign-in links (migrations/1765300000000_console-sessions.sql).
// Rows are found by the SHA-256 digest of the secret the browser or the link holds, never by the secret.
import type { Queryable } from './pool.js';

export interface StoredSession {
  tokenDigest: Buffer;
  expiresAt: Date;
}

interface SessionRow {
  token_digest: Buffer;
  expires_at: Date;
}

const stored = (row: SessionRow): StoredSession => ({ tokenDigest: row.token_digest, expiresAt: row.expires_at });

/** Deletes the expired sessions as part of the statement that opens a new one. */
const deleteExpiredSessions = `expired_sessions AS (DELETE FROM console_sessions WHERE expires_at <= now())`;

/** How stale last_seen_at may grow before a lookup writes it again: most lookups then write nothing. */
const lastSeenResolution = `interval '1 minute'`;

/** Opens a session of the token whose digest this is, for `lifetimeS` seconds. */
export async function insertSession(
  db: Queryable,
  session: { idDigest: Buffer; tokenDigest: Buffer; lifetimeS: number },
): Promise<StoredSession> {
  const { rows } = await db.query<SessionRow>(
    `WITH ${deleteExpiredSessions}
     INSERT INTO console_sessions (id_digest, token_digest, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
     RETURNING token_digest, expires_at`,
    [session.idDigest, session.tokenDigest, session.lifetimeS],
  );
  return stored(rows[0]!);
}

/**
 * The unexpired session with this id digest, in one statement on the primary key; its last_seen_at is
 * brought up to date when it is more than a minute old.
 */
export async function findSession(db: Queryable, idDigest: Buffer): Promise<StoredSession | undefined> {
  const { rows } = await db.query<SessionRow>(
    `WITH found AS (
       SELECT token_digest, expires_at FROM console_sessions WHERE id_digest = $1 AND expires_at > now()
     ), touched AS (
       UPDATE console_sessions SET last_seen_at = now()
       WHERE id_digest = $1 AND expires_at > now() AND last_seen_at < now() - ${lastSeenResolution}
     )
     SELECT token_digest, expires_at FROM found`,
    [idDigest],
  );
  return rows[0] ? stored(rows[0]) : undefined;
}

/** Ends the session with this id digest (nothing when there is none). */
export async function deleteSession(db: Queryable, idDigest: Buffer): Promise<void> {
  await db.query(`DELETE FROM console_sessions WHERE id_digest = $1`, [idDigest]);
}

/** Keeps the code of a sign-in link for `lifetimeMs`; expired codes are deleted. */
export async function insertSignInCode(
  db: Queryable,
  code: { codeDigest: Buffer; tokenDigest: Buffer; lifetimeMs: number },
): Promise<void> {
  await db.query(
    `WITH expired_codes AS (DELETE FROM console_sign_in_codes WHERE expires_at <= now())
     INSERT INTO console_sign_in_codes (code_digest, token_digest, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))`,
    [code.codeDigest, code.tokenDigest, code.lifetimeMs / 1000],
  );
}

/** The token digest of an unexpired code, which stays usable. */
export async function findSignInCode(db: Queryable, codeDigest: Buffer): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ token_digest: Buffer }>(
    `SELECT token_digest FROM console_sign_in_codes WHERE code_digest = $1 AND expires_at > now()`,
    [codeDigest],
  );
  return rows[0]?.token_digest;
}

/**
 * Exchanges a code for a session in one statement: the code is deleted whatever it was, and the session
 * is opened only when the code had not expired and its token is one of `tokenDigests`. Of two exchanges
 * of one code at once, the second waits for the first and finds no code.
 */
export async function exchangeSignInCode(
  db: Queryable,
  exchange: { codeDigest: Buffer; idDigest: Buffer; lifetimeS: number; tokenDigests: Buffer[] },
): Promise<StoredSession | undefined> {
  const { rows } = await db.query<SessionRow>(
    `WITH code AS (
       DELETE FROM console_sign_in_codes WHERE code_digest = $1 RETURNING token_digest, expires_at
     ), ${deleteExpiredSessions}
     INSERT INTO console_sessions (id_digest, token_digest, expires_at)
     SELECT $2, token_digest, now() + make_interval(secs => $3) FROM code
     WHERE code.expires_at > now() AND code.token_digest = ANY ($4::bytea[])
     RETURNING token_digest, expires_at`,
    [exchange.codeDigest, exchange.idDigest, exchange.lifetimeS, exchange.tokenDigests],
  );
  return rows[0] ? stored(rows[0]) : undefined;
}
