-- Up Migration

-- The W3C traceparent of the webhook request that queued the child (null when tracing is off or did not
-- sample it): the dispatcher's signal links back to it, so an album's trace reaches every child that made it.
ALTER TABLE outbox ADD COLUMN traceparent text;

-- Down Migration

ALTER TABLE outbox DROP COLUMN traceparent;
