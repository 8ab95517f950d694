-- Up Migration

-- LINE (the Messaging API webhook) is a route of its own: its albums are LINE image sets.
ALTER TABLE albums DROP CONSTRAINT albums_source_check;
ALTER TABLE albums ADD CONSTRAINT albums_source_check CHECK (source IN ('unifyport', 'telegram', 'line'));

-- LINE content has no URL: the download asks LINE's content API for the child's message id, with the
-- access token of the channel the webhook came through (the channel's name under the workspace).
ALTER TABLE attachments ADD COLUMN line_channel text;

-- When the sender unsent the message (LINE's `unsend` event): the child is kept, flagged as withdrawn.
ALTER TABLE messages ADD COLUMN withdrawn_at timestamptz;

-- Down Migration
ALTER TABLE messages DROP COLUMN withdrawn_at;
ALTER TABLE attachments DROP COLUMN line_channel;
ALTER TABLE albums DROP CONSTRAINT albums_source_check;
ALTER TABLE albums ADD CONSTRAINT albums_source_check CHECK (source IN ('unifyport', 'telegram'));
