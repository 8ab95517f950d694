-- Up Migration

-- An operator's resolution of an album's review (resolve-review); cleared when a new reason flags it again.
ALTER TABLE albums
  ADD COLUMN review_resolved_at timestamptz,
  ADD COLUMN review_note        text;

-- Every operator action on an album, as it was carried out by the album's workflow.
CREATE TABLE operator_actions (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workflow_id  text        NOT NULL,
  action       text        NOT NULL CHECK (action IN ('retry-downloads', 'resolve-review')),
  detail       jsonb       NOT NULL DEFAULT '{}',
  requested_by text,
  at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operator_actions_workflow ON operator_actions (workflow_id, id);

-- Telegram albums are decided at their tenth child.
ALTER TABLE decisions DROP CONSTRAINT decisions_trigger_check;
ALTER TABLE decisions ADD CONSTRAINT decisions_trigger_check
  CHECK (trigger IN ('expected_count_reached', 'quiet_period', 'max_wait', 'late_item', 'album_full', 'standalone'));

-- Dispatchers LISTEN on albumflow_outbox: every statement that queues children wakes them at once. A
-- trigger rather than a NOTIFY in the ingest statement, so that every writer of the outbox announces it.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM queued) THEN
    PERFORM pg_notify('albumflow_outbox', '');
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox REFERENCING NEW TABLE AS queued
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Down Migration
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
ALTER TABLE decisions DROP CONSTRAINT decisions_trigger_check;
ALTER TABLE decisions ADD CONSTRAINT decisions_trigger_check
  CHECK (trigger IN ('expected_count_reached', 'quiet_period', 'max_wait', 'late_item', 'standalone'));
DROP TABLE operator_actions;
ALTER TABLE albums DROP COLUMN review_resolved_at, DROP COLUMN review_note;
