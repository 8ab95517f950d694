-- Up Migration

-- Keys albumflow signs its own links with (the `media_url` of a notification's attachments), made by the
-- first process that needs one and read by every other, so that a worker signs what any ingress verifies.
CREATE TABLE signing_keys (
  name text PRIMARY KEY,
  secret bytea NOT NULL CHECK (octet_length(secret) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE signing_keys;
