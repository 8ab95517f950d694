-- Up Migration

-- The W3C traceparent of the webhook request that stored the child, or queued it again (null when tracing
-- is off or did not sample the request): the dispatcher's signal links to the outbox row's, the album's
-- decision to the child's, so an album's trace reaches every child that made it.
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE messages ADD COLUMN traceparent text;

-- The review queue (albums a person must look at), counted for /metrics at each scrape.
CREATE INDEX albums_review_open ON albums (id) WHERE cardinality(review_reasons) > 0 AND review_resolved_at IS NULL;

-- Down Migration

DROP INDEX albums_review_open;
ALTER TABLE messages DROP COLUMN traceparent;
ALTER TABLE outbox DROP COLUMN traceparent;
