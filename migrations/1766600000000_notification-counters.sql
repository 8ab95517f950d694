-- Up Migration

-- The last decision seq of each album workflow whose decisions a purge removed (retention or an erasure).
-- A later album under the same workflow id numbers its decisions after it, so a notification id
-- (`<workflow id>/<seq>`) never names two albums. It holds no content: a workflow id and a number.
CREATE TABLE notification_counters (
  workflow_id text    PRIMARY KEY,
  last_seq    integer NOT NULL
);

-- A notification's data without the children an erasure took out of an album that stays (src/db/purge.ts,
-- amendAlbums): out of the album view's children, its decisions' and the decision's message ids. The
-- counts stay as they were sent: they hold no content.
CREATE FUNCTION ids_without(ids jsonb, erased text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(jsonb_agg(id ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(ids) WITH ORDINALITY AS t (id, n)
   WHERE (id #>> '{}') <> ALL (erased)
$$;

CREATE FUNCTION decision_without_children(decision jsonb, erased text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(decision->'childMessageIds') = 'array'
              THEN jsonb_set(decision, '{childMessageIds}', ids_without(decision->'childMessageIds', erased))
              ELSE decision END
$$;

CREATE FUNCTION notification_without_children(payload jsonb, erased text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT payload
    || CASE WHEN jsonb_typeof(payload->'decision') = 'object'
            THEN jsonb_build_object('decision', decision_without_children(payload->'decision', erased))
            ELSE '{}'::jsonb END
    || CASE WHEN jsonb_typeof(payload->'album'->'children') = 'array'
            THEN jsonb_build_object('album', payload->'album' || jsonb_build_object(
                   'children', (SELECT coalesce(jsonb_agg(child ORDER BY n), '[]'::jsonb)
                                  FROM jsonb_array_elements(payload->'album'->'children') WITH ORDINALITY AS t (child, n)
                                 WHERE (child->>'messageId') <> ALL (erased)),
                   'decisions', (SELECT coalesce(jsonb_agg(decision_without_children(d, erased) ORDER BY n), '[]'::jsonb)
                                   FROM jsonb_array_elements(coalesce(payload->'album'->'decisions', '[]'::jsonb)) WITH ORDINALITY AS t (d, n))))
            ELSE '{}'::jsonb END
$$;

-- Down Migration

DROP FUNCTION notification_without_children(jsonb, text[]);
DROP FUNCTION decision_without_children(jsonb, text[]);
DROP FUNCTION ids_without(jsonb, text[]);
DROP TABLE notification_counters;
