-- Up Migration

-- Turns an endpoint on or off with its deliveries (src/db/endpoints.ts, switchEndpoint): off holds the pending
-- ones, on makes the held ones due at once on a new schedule. A notification being recorded holds the endpoint
-- `FOR KEY SHARE` and queues its delivery `pending` or `held` by the endpoint's `enabled` as it read it
-- (src/db/deliveries.ts). The switch first locks the endpoint `FOR UPDATE`, which waits for the recordings in
-- flight and makes the later ones wait for it (they then read the switched row); its next statements take a
-- snapshot after that lock (each statement of a VOLATILE function takes its own in READ COMMITTED), so they
-- move every delivery those recordings queued. Without the lock, a delivery recorded while the endpoint was
-- switched kept the state of before: `pending` on a disabled endpoint (never attempted) or `held` on an enabled one.
CREATE FUNCTION switch_endpoint(p_id text, p_enabled boolean, p_reason text) RETURNS SETOF endpoints
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM endpoints WHERE id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF p_enabled THEN
    UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = now()
     WHERE endpoint_id = p_id AND state = 'held';
    RETURN QUERY
      UPDATE endpoints
         SET enabled = true, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, updated_at = now()
       WHERE id = p_id
      RETURNING *;
  ELSE
    UPDATE deliveries SET state = 'held' WHERE endpoint_id = p_id AND state = 'pending';
    -- A disabled endpoint keeps the reason it was disabled for first.
    RETURN QUERY
      UPDATE endpoints
         SET enabled = false, disabled_reason = COALESCE(disabled_reason, p_reason),
             disabled_at = COALESCE(disabled_at, now()), updated_at = now()
       WHERE id = p_id
      RETURNING *;
  END IF;
END
$$;

-- Down Migration

DROP FUNCTION switch_endpoint(text, boolean, text);
