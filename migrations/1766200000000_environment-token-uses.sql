-- Up Migration

-- When each token of the environment (API_TOKENS, or the generated admin token) was last used, by its
-- SHA-256 digest (the token itself is never kept): what the token lists show beside the admin API's tokens'
-- last_used_at. Written at most every few seconds per process, and read with the tenant tables; no
-- notification (a use changes nothing a lookup reads). A token taken out of the environment leaves its row.
CREATE TABLE environment_token_uses (
  digest       bytea       PRIMARY KEY CHECK (octet_length(digest) = 32),
  last_used_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE environment_token_uses;
