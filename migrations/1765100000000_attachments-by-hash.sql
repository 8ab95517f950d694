-- Up Migration

-- The media routes answer for a file only when its hash belongs to an attachment of the workspace
-- asked for; every thumbnail of an album page looks one up.
CREATE INDEX attachments_sha256 ON attachments (sha256) WHERE sha256 IS NOT NULL;

-- Down Migration
DROP INDEX attachments_sha256;
