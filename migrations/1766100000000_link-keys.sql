-- Up Migration

-- The keys of the `media_url` links (src/media/link-keys.ts), sealed under ALBUMFLOW_SECRET_KEY like the
-- tenants' secrets, so that a dump of the database alone mints no link. A link names its key by `id`. One key
-- signs (retired_at NULL); a retired one still verifies the links it signed until they have expired, then it
-- is deleted. The plain key of signing_keys is dropped, not carried over: the links it signed stop working,
-- and each notification gets fresh ones at its next attempt or feed read.
CREATE TABLE link_keys (
  id         text        PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  secret     bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);
CREATE UNIQUE INDEX link_keys_one_current ON link_keys ((true)) WHERE retired_at IS NULL;

DROP TABLE signing_keys;

-- Down Migration

CREATE TABLE signing_keys (
  name text PRIMARY KEY,
  secret bytea NOT NULL CHECK (octet_length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
DROP TABLE link_keys;
