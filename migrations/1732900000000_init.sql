-- Up Migration

-- Every verified webhook event, deduplicated by its id within workspace + source.
CREATE TABLE events (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace         text        NOT NULL,
  source            text        NOT NULL,
  event_id          text        NOT NULL,
  type              text,
  first_received_at timestamptz NOT NULL DEFAULT now(),
  last_received_at  timestamptz NOT NULL DEFAULT now(),
  delivery_count    integer     NOT NULL DEFAULT 1,
  raw               jsonb       NOT NULL,
  UNIQUE (workspace, source, event_id)
);

-- One row per scoped album identity; the album workflow keeps state and review current.
CREATE TABLE albums (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace         text        NOT NULL,
  provider          text        NOT NULL,
  account_id        text        NOT NULL,
  conversation_id   text        NOT NULL,
  album_id          text        NOT NULL,
  workflow_id       text        NOT NULL UNIQUE,
  state             text        NOT NULL DEFAULT 'collecting' CHECK (state IN ('collecting', 'processed', 'closed')),
  review_reasons    text[]      NOT NULL DEFAULT '{}',
  first_received_at timestamptz NOT NULL DEFAULT now(),
  last_received_at  timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace, provider, account_id, conversation_id, album_id)
);
CREATE INDEX albums_newest ON albums (workspace, id DESC);

-- One row per child message, under its own scoped identity. Album metadata is kept as received
-- (album_meta) next to the usable values (album_index, album_total: non-negative integers only).
CREATE TABLE messages (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace         text        NOT NULL,
  provider          text        NOT NULL,
  account_id        text        NOT NULL,
  conversation_id   text        NOT NULL,
  message_id        text        NOT NULL,
  album_pk          bigint      REFERENCES albums (id),
  album_meta        jsonb,
  album_index       integer,
  album_total       integer,
  metadata_invalid  boolean     NOT NULL DEFAULT false,
  caption           text,
  sent_at           timestamptz,
  raw               jsonb       NOT NULL,
  first_received_at timestamptz NOT NULL DEFAULT now(),
  last_received_at  timestamptz NOT NULL DEFAULT now(),
  delivery_count    integer     NOT NULL DEFAULT 1,
  UNIQUE (workspace, provider, account_id, conversation_id, message_id)
);
CREATE INDEX messages_album ON messages (album_pk) WHERE album_pk IS NOT NULL;

-- One row per attachment of a child; the URL locates media and is never a grouping key.
CREATE TABLE attachments (
  message_pk    bigint      NOT NULL REFERENCES messages (id),
  position      integer     NOT NULL,
  kind          text,
  url           text,
  mime_type     text,
  declared_size bigint,
  file_name     text,
  status        text        NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'downloaded', 'failed', 'expired', 'unavailable')),
  content_type  text,
  bytes         bigint,
  sha256        text,
  error         text,
  attempts      integer     NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_pk, position)
);

-- Verified bodies that could not be stored as a child, with the reason.
CREATE TABLE quarantine (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace   text        NOT NULL,
  reason      text        NOT NULL,
  detail      text,
  raw         bytea       NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);

-- Children committed but not yet handed to Temporal. Rows are deleted once Temporal accepted the signal.
-- A row whose workflow refused the signal waits until available_at (per-row backoff).
CREATE TABLE outbox (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_pk   bigint      NOT NULL REFERENCES messages (id),
  created_at   timestamptz NOT NULL DEFAULT now(),
  available_at timestamptz NOT NULL DEFAULT now(),
  attempts     integer     NOT NULL DEFAULT 0,
  last_error   text
);

-- Every decision an album (or standalone message) workflow took, with the exact children it included.
CREATE TABLE decisions (
  workflow_id       text        NOT NULL,
  seq               integer     NOT NULL,
  trigger           text        NOT NULL
                    CHECK (trigger IN ('expected_count_reached', 'quiet_period', 'max_wait', 'late_item', 'standalone')),
  child_message_ids text[]      NOT NULL,
  decided_at        timestamptz NOT NULL,
  recorded_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, seq)
);

-- Outbound notifications, keyed by their stable id (<workflowId>/<seq>[/<type>]).
CREATE TABLE notifications (
  id           text        PRIMARY KEY,
  workflow_id  text        NOT NULL,
  type         text        NOT NULL,
  payload      jsonb       NOT NULL,
  status       text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'recorded', 'failed')),
  attempts     integer     NOT NULL DEFAULT 0,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);
CREATE INDEX notifications_workflow ON notifications (workflow_id);

-- Down Migration
DROP TABLE notifications, decisions, outbox, quarantine, attachments, messages, albums, events;
