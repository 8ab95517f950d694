-- Up Migration

-- Data lifetime (docs/design.md, "Data lifetime"): retention purges what an album closed longer than its
-- workspace's retention stored; an erasure removes one album, message or conversation on request.

-- A workspace's retention in days (fractional allowed), overriding RETENTION_DAYS; days NULL: keep
-- everything. A workspace without a row takes RETENTION_DAYS.
CREATE TABLE workspace_retention (
  workspace  text        PRIMARY KEY,
  days       numeric     CHECK (days > 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The receipt of an erasure: what was asked for, when, by which token (its name), and how many rows and
-- objects went; never content.
CREATE TABLE erasures (
  id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace    text        NOT NULL,
  scope        text        NOT NULL CHECK (scope IN ('album', 'message', 'conversation')),
  subject      jsonb       NOT NULL,
  requested_by text        NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT now(),
  state        text        NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
  counts       jsonb       NOT NULL DEFAULT '{}',
  finished_at  timestamptz
);
CREATE INDEX erasures_workspace ON erasures (workspace, requested_at DESC);

-- A child's identity as tombstones and events keep it: the SHA-256 of its scoped key (workspace, provider,
-- account, conversation, message), one definition for every statement that needs it.
CREATE FUNCTION child_identity(workspace text, provider text, account_id text, conversation_id text, message_id text)
  RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN sha256(convert_to(jsonb_build_array(workspace, provider, account_id, conversation_id, message_id)::text, 'UTF8'));

-- The identity of every erased child: the SHA-256 of its scoped key, never the key itself. A redelivery
-- of it is acknowledged and not stored again until the tombstone expires (past the providers'
-- redelivery horizons), when retention removes the tombstone too.
CREATE TABLE tombstones (
  identity   bytea       PRIMARY KEY CHECK (octet_length(identity) = 32),
  workspace  text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX tombstones_expiry ON tombstones (expires_at);

-- The child an event delivered, by the same digest as a tombstone: an erasure or a purge finds the raw
-- events of the children it removes by it. NULL for events of other types (purged by their age).
ALTER TABLE events ADD COLUMN child_identity bytea;
CREATE INDEX events_child ON events (child_identity) WHERE child_identity IS NOT NULL;
CREATE INDEX events_unlinked_age ON events (last_received_at) WHERE child_identity IS NULL;

-- Media objects whose last attachment a purge removed: the collector removes each one that is still
-- unreferenced (under the object's advisory lock), then its row.
CREATE TABLE media_garbage (
  sha256 text        PRIMARY KEY,
  since  timestamptz NOT NULL DEFAULT now()
);

-- Objects the collector removed lately: a download that found one of these in the store before it was
-- removed checks again, under the same lock, that its object is still there before it records it.
CREATE TABLE media_removals (
  sha256     text        PRIMARY KEY,
  removed_at timestamptz NOT NULL DEFAULT now()
);

-- What retention looks for.
CREATE INDEX albums_closed_age ON albums (updated_at) WHERE state = 'closed';
CREATE INDEX messages_standalone_age ON messages (last_received_at) WHERE album_pk IS NULL;
CREATE INDEX messages_conversation ON messages (workspace, provider, account_id, conversation_id);
CREATE INDEX albums_conversation ON albums (workspace, provider, account_id, conversation_id);
CREATE INDEX quarantine_age ON quarantine (received_at);
CREATE INDEX outbox_message ON outbox (message_pk);

-- Down Migration
DROP INDEX outbox_message, quarantine_age, albums_conversation, messages_conversation,
  messages_standalone_age, albums_closed_age;
DROP TABLE media_removals, media_garbage;
DROP INDEX events_unlinked_age, events_child;
ALTER TABLE events DROP COLUMN child_identity;
DROP TABLE tombstones, erasures, workspace_retention;
DROP FUNCTION child_identity;
