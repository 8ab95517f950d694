-- Up Migration

-- The W3C traceparent of the webhook request that stored the child, or queued it again (null when tracing
-- is off or did not sample the request): the dispatcher's signal links to the outbox row's, the album's
-- decision to the child's, so an album's trace reaches every child that made it.
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE messages ADD COLUMN traceparent text;

-- Down Migration

ALTER TABLE messages DROP COLUMN traceparent;
ALTER TABLE outbox DROP COLUMN traceparent;
