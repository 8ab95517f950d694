-- Up Migration

-- Outbound delivery (DESIGN.md §16): every workspace's own endpoints, signed the Standard Webhooks way, with
-- PostgreSQL as the queue (src/delivery/engine.ts), and a pull feed for receivers that cannot take webhooks.

-- An endpoint receives the notifications of its workspace whose type it subscribes to (types NULL: all).
-- The one endpoint "from the environment" (NOTIFY_URL, id `ep_environment`) has no workspace: it receives
-- every workspace's. A disabled endpoint keeps its deliveries `held` until it is enabled again. The process
-- that sends to an endpoint holds its lease (leased_by, leased_until), so that its rate limit and
-- concurrency hold across processes.
CREATE TABLE endpoints (
  id              text        PRIMARY KEY,
  workspace       text,
  source          text        NOT NULL CHECK (source IN ('environment', 'database')),
  url             text        NOT NULL,
  description     text        NOT NULL DEFAULT '',
  types           text[]      CHECK (cardinality(types) > 0 AND types <@ ARRAY['album.ready', 'album.updated',
                                'album.media_settled', 'message.ready', 'album.erased', 'message.erased']),
  rate_limit      integer     NOT NULL DEFAULT 10 CHECK (rate_limit > 0),
  enabled         boolean     NOT NULL DEFAULT true,
  disabled_reason text        CHECK (disabled_reason IN ('gone', 'failing', 'operator')),
  disabled_at     timestamptz,
  -- The first failed attempt since the last success: five days of failures disable the endpoint.
  failing_since   timestamptz,
  last_success_at timestamptz,
  leased_by       text,
  leased_until    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((source = 'environment') = (workspace IS NULL)),
  CHECK (enabled = (disabled_reason IS NULL) AND enabled = (disabled_at IS NULL))
);
CREATE UNIQUE INDEX endpoints_one_environment ON endpoints (source) WHERE source = 'environment';
CREATE INDEX endpoints_workspace ON endpoints (workspace, created_at);

-- An endpoint's `whsec_` secrets, sealed like the tenants' (bound to table, column, endpoint and id).
-- expires_at NULL: the current one; a rotated-out one keeps signing beside it until it expires.
CREATE TABLE endpoint_secrets (
  endpoint_id text        NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  id          text        NOT NULL,
  secret      bytea       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz,
  PRIMARY KEY (endpoint_id, id)
);

-- A notification recorded for delivery carries its workspace and its place in the order of recording;
-- `payload` holds its data without media links (those are minted at each attempt and each feed read), and
-- `created_at` is when it was recorded; `traceparent` names the span that recorded it (tracing on), which each
-- attempt continues. Rows stored before this migration keep NULL in all three.
-- Sending is each delivery's (below): the notification's own sending state goes.
ALTER TABLE notifications ADD COLUMN workspace text, ADD COLUMN position bigint, ADD COLUMN traceparent text,
  DROP COLUMN status, DROP COLUMN attempts, DROP COLUMN last_error, DROP COLUMN delivered_at;
CREATE SEQUENCE notification_positions OWNED BY notifications.position;
ALTER TABLE notifications ALTER COLUMN position SET DEFAULT nextval('notification_positions');
CREATE INDEX notifications_recorded ON notifications (workspace, created_at) WHERE workspace IS NOT NULL;

-- One row per (notification, endpoint subscribed when it was recorded). order_key is the notification's
-- workflow id (an album or a standalone message): per endpoint and order key, deliveries go out in
-- position order, the next waiting while an earlier one is pending or held. attempts counts the attempts
-- of the current schedule (retry, replay and enable start a new one); leased_until marks an attempt in
-- flight, made again by any process once it passed.
CREATE TABLE deliveries (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  notification_id text        NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
  endpoint_id     text        NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  workspace       text        NOT NULL,
  order_key       text        NOT NULL,
  position        bigint      NOT NULL,
  state           text        NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'held')),
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  leased_until    timestamptz,
  last_attempt_at timestamptz,
  delivered_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (notification_id, endpoint_id)
);
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_order ON deliveries (endpoint_id, order_key, position) WHERE state IN ('pending', 'held');
CREATE INDEX deliveries_by_state ON deliveries (endpoint_id, state, position);

-- Every attempt of a delivery, in order: what the receiver answered (status NULL: no answer, see error) and
-- at most 1 KB of its body.
CREATE TABLE delivery_attempts (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id bigint      NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  at          timestamptz NOT NULL,
  status_code integer,
  duration_ms integer     NOT NULL,
  error       text,
  response    text        CHECK (octet_length(response) <= 1024)
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, id);

-- The pull feed. A workspace's positions come from its row in feed_positions, updated in the transaction
-- that records the notification: the row lock makes one recording transaction at a time append (until it
-- commits), so positions become visible in commit order and a reader past position p never misses a later
-- commit below p. The counters hold no content and survive erasure: a position is never reused.
CREATE TABLE feed_positions (
  workspace text   PRIMARY KEY,
  position  bigint NOT NULL
);
CREATE TABLE feed (
  workspace       text   NOT NULL,
  position        bigint NOT NULL,
  notification_id text   NOT NULL UNIQUE REFERENCES notifications (id) ON DELETE CASCADE,
  PRIMARY KEY (workspace, position)
);

-- Senders in every process wake when a delivery becomes due now (recorded, retried, replayed, released by
-- an enable); the sender's own claims and results do not wake them. Long polls of the feed wake on an entry
-- of their workspace.
CREATE FUNCTION deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM changed WHERE state = 'pending' AND next_attempt_at <= now() AND leased_until IS NULL) THEN
    PERFORM pg_notify('albumflow_deliveries', '');
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER deliveries_inserted_notify AFTER INSERT ON deliveries
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION deliveries_notify();
CREATE TRIGGER deliveries_updated_notify AFTER UPDATE ON deliveries
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION deliveries_notify();

CREATE FUNCTION feed_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('albumflow_feed', NEW.workspace);
  RETURN NULL;
END;
$$;
CREATE TRIGGER feed_inserted_notify AFTER INSERT ON feed FOR EACH ROW EXECUTE FUNCTION feed_notify();

-- Down Migration
DROP TABLE feed, feed_positions, delivery_attempts, deliveries, endpoint_secrets, endpoints;
DROP FUNCTION feed_notify(), deliveries_notify();
DROP INDEX notifications_recorded;
ALTER TABLE notifications DROP COLUMN traceparent, DROP COLUMN position, DROP COLUMN workspace,
  ADD COLUMN status text NOT NULL DEFAULT 'recorded' CHECK (status IN ('pending', 'delivered', 'recorded', 'failed')),
  ADD COLUMN attempts integer NOT NULL DEFAULT 0, ADD COLUMN last_error text, ADD COLUMN delivered_at timestamptz;
