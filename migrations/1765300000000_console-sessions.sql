-- Up Migration

-- The console's sessions. The cookie carries a random id; only its SHA-256 digest is kept, so a copy of
-- this table signs nobody in. token_digest is the SHA-256 of the token the session was opened with: a
-- session counts only while that token is configured (its short hash, as logs show it, is the first 12
-- hex digits of this digest). Signing out deletes the row.
CREATE TABLE console_sessions (
  id_digest    bytea       PRIMARY KEY CHECK (octet_length(id_digest) = 32),
  token_digest bytea       NOT NULL CHECK (octet_length(token_digest) = 32),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
-- Expired rows are deleted at every sign-in.
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);

-- The single-use codes of the sign-in links that `npm start` prints, kept by their digest: any process
-- sharing this database exchanges a code, and only once.
CREATE TABLE console_sign_in_codes (
  code_digest  bytea       PRIMARY KEY CHECK (octet_length(code_digest) = 32),
  token_digest bytea       NOT NULL CHECK (octet_length(token_digest) = 32),
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sign_in_codes_expires_at ON console_sign_in_codes (expires_at);

-- Down Migration
DROP TABLE console_sign_in_codes;
DROP TABLE console_sessions;
