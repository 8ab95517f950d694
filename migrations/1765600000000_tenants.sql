-- Up Migration

-- Tenants managed while albumflow runs (docs/operations.md): workspaces, their webhook signing secrets, API
-- tokens, Telegram bots and LINE channels. No value that proves who someone is is kept readable: a token
-- only as its SHA-256 digest, every secret sealed with AES-256-GCM under ALBUMFLOW_SECRET_KEY (or
-- DATA_DIR/secret-key), as `version | key id | IV | tag | ciphertext` (src/common/secret-key.ts). Removing
-- a workspace removes what lets webhooks in; the albums it stored stay until they are erased.
CREATE TABLE workspaces (
  name       text        PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Several per workspace, for rotation: any one of them verifies a webhook.
CREATE TABLE workspace_secrets (
  id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace  text        NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
  secret     bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workspace_secrets_workspace ON workspace_secrets (workspace);

-- workspaces = '{*}' reaches every workspace. last_used_at is written at most every few seconds per process.
CREATE TABLE api_tokens (
  id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  name         text        NOT NULL UNIQUE,
  digest       bytea       NOT NULL UNIQUE CHECK (octet_length(digest) = 32),
  workspaces   text[]      NOT NULL CHECK (cardinality(workspaces) > 0),
  expires_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);

-- bot_id (the number before ':' in the token) is the account the bot's children are stored under.
CREATE TABLE telegram_bots (
  workspace    text        NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
  name         text        NOT NULL,
  bot_id       text        NOT NULL,
  token        bytea       NOT NULL,
  secret_token bytea       NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace, name),
  UNIQUE (workspace, bot_id)
);

CREATE TABLE line_channels (
  workspace            text        NOT NULL REFERENCES workspaces (name) ON DELETE CASCADE,
  name                 text        NOT NULL,
  channel_secret       bytea       NOT NULL,
  channel_access_token bytea       NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace, name)
);

-- Every change made through the admin API: who (the token's name and short hash), what, when; never a value.
CREATE TABLE admin_audit (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  token_name text        NOT NULL,
  token_hash text        NOT NULL,
  action     text        NOT NULL,
  subject    text        NOT NULL
);

-- Every process keeps a snapshot of these tables (src/tenants/registry.ts) and reloads it on this
-- notification (and every second as a backstop). A token's last use changes nothing it reads.
CREATE FUNCTION tenants_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('albumflow_tenants', '');
  RETURN NULL;
END;
$$;
CREATE TRIGGER workspaces_notify AFTER INSERT OR UPDATE OR DELETE ON workspaces
  FOR EACH STATEMENT EXECUTE FUNCTION tenants_notify();
CREATE TRIGGER workspace_secrets_notify AFTER INSERT OR UPDATE OR DELETE ON workspace_secrets
  FOR EACH STATEMENT EXECUTE FUNCTION tenants_notify();
CREATE TRIGGER api_tokens_notify AFTER INSERT OR DELETE OR UPDATE OF name, digest, workspaces, expires_at ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION tenants_notify();
CREATE TRIGGER telegram_bots_notify AFTER INSERT OR UPDATE OR DELETE ON telegram_bots
  FOR EACH STATEMENT EXECUTE FUNCTION tenants_notify();
CREATE TRIGGER line_channels_notify AFTER INSERT OR UPDATE OR DELETE ON line_channels
  FOR EACH STATEMENT EXECUTE FUNCTION tenants_notify();

-- Down Migration
DROP TABLE admin_audit;
DROP TABLE line_channels;
DROP TABLE telegram_bots;
DROP TABLE api_tokens;
DROP TABLE workspace_secrets;
DROP TABLE workspaces;
DROP FUNCTION tenants_notify();
