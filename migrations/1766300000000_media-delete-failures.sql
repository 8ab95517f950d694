-- Up Migration

-- An object the store did not remove (it refused the delete: a missing s3:DeleteObject, an object lock;
-- or it did not answer for longer than the collector waits) stays queued, set aside: `failures` so far,
-- the last error (the store's answer, never a credential), and when the collector tries it again
-- (`retry_at`, growing from an hour; NULL for an object not set aside). `failing_since` is when the store
-- began not to answer for it, while the collector still waits for the store to come back.
ALTER TABLE media_garbage
  ADD COLUMN failures      integer     NOT NULL DEFAULT 0,
  ADD COLUMN last_error    text,
  ADD COLUMN failing_since timestamptz,
  ADD COLUMN retry_at      timestamptz;

-- The set-aside objects: what the collector skips until their time, and what the metric counts.
CREATE INDEX media_garbage_set_aside ON media_garbage (retry_at) WHERE retry_at IS NOT NULL;

-- Down Migration
DROP INDEX media_garbage_set_aside;
ALTER TABLE media_garbage DROP COLUMN retry_at, DROP COLUMN failing_since, DROP COLUMN last_error, DROP COLUMN failures;
