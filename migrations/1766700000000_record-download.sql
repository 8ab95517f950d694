-- Up Migration

-- A download's outcome with the objects it stored, recorded in one round trip (src/db/attachments.ts,
-- recordDownloadResult): under each object's lock (the collector's, src/db/media-collector.ts), in a
-- snapshot taken after the locks (each statement of a VOLATILE function takes its own in READ COMMITTED),
-- so that an object the collector removed before the lock was granted is seen. Answers:
--   'removed'  — the collector removed one of the objects lately (and `p_confirmed` does not name it): nothing
--                is written; the caller asks the store whether the object is there, under the lock in a
--                transaction of its own, and calls again naming the objects the store holds in `p_confirmed`;
--   'recorded' — the outcome is the attachment's;
--   'replaced' — the row is gone or holds another file now: the objects are queued for the collector.
CREATE FUNCTION record_download(
  p_message_pk bigint, p_position integer, p_status text, p_content_type text, p_bytes bigint, p_sha256 text,
  p_error text, p_file_unique_id text, p_still_unique_id text, p_still_content_type text, p_still_bytes bigint,
  p_still_sha256 text, p_objects text[], p_confirmed text[]
) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  object text;
BEGIN
  FOREACH object IN ARRAY p_objects LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('albumflow-media:' || object, 0));
  END LOOP;
  IF EXISTS (SELECT 1 FROM media_removals WHERE sha256 = ANY (p_objects) AND sha256 <> ALL (p_confirmed)) THEN
    RETURN 'removed';
  END IF;
  UPDATE attachments
     SET status = p_status, content_type = p_content_type, bytes = p_bytes, sha256 = p_sha256, error = p_error,
         attempts = attempts + 1, still_content_type = p_still_content_type, still_bytes = p_still_bytes,
         still_sha256 = p_still_sha256, updated_at = now()
   WHERE message_pk = p_message_pk AND position = p_position
     AND telegram_file_unique_id IS NOT DISTINCT FROM p_file_unique_id
     AND still_telegram_file_unique_id IS NOT DISTINCT FROM p_still_unique_id;
  IF FOUND THEN
    RETURN 'recorded';
  END IF;
  INSERT INTO media_garbage (sha256) SELECT unnest(p_objects) ORDER BY 1 ON CONFLICT (sha256) DO NOTHING;
  RETURN 'replaced';
END
$$;

-- Down Migration

DROP FUNCTION record_download(bigint, integer, text, text, bigint, text, text, text, text, text, bigint, text, text[], text[]);
