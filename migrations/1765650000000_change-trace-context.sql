-- Up Migration

-- The W3C traceparent of the webhook request that edited a message (with the version it made) or withdrew
-- it (null when tracing is off or did not sample the request): the album.updated it causes links to it, so
-- the album's trace reaches the request that changed it.
ALTER TABLE message_history ADD COLUMN traceparent text;
ALTER TABLE messages ADD COLUMN withdrawn_traceparent text;

-- Down Migration
ALTER TABLE messages DROP COLUMN withdrawn_traceparent;
ALTER TABLE message_history DROP COLUMN traceparent;
