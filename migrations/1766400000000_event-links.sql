-- Up Migration

-- Every raw event is linked to what it names (docs/design.md, "Data lifetime"), so that an erasure or a
-- purge finds it whatever its type: one link per child it names (a LINE message or unsend, a Telegram
-- message, edit or reaction, each child a `deleted_business_messages` names, a UnifyPort event's
-- message), or, when it names none, one link to its conversation alone (message_id NULL: a Telegram
-- update without content, a LINE follow or postback, a UnifyPort event of another type). It replaces
-- events.child_identity, which named one child and was never filled for the events stored before it.
CREATE TABLE event_links (
  event_pk        bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  workspace       text   NOT NULL,
  provider        text   NOT NULL,
  account_id      text   NOT NULL,
  conversation_id text   NOT NULL,
  message_id      text,
  UNIQUE NULLS NOT DISTINCT (event_pk, provider, account_id, conversation_id, message_id)
);
-- A child's erasure (the full key) and a conversation's (its prefix).
CREATE INDEX event_links_scope ON event_links (workspace, provider, account_id, conversation_id, message_id);

-- One part of an identity as the parsers read it: a non-empty string, or a number as its text.
CREATE FUNCTION event_identity_part(value jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN jsonb_typeof(value) IN ('string', 'number') AND value #>> '{}' <> '' THEN value #>> '{}' END;

-- What a stored event names, read from its raw body by its source, as the parsers of src/platforms/ read
-- it: a row per child named, or one row with message_id NULL for the conversation of an event that names
-- no child; nothing when the body names no conversation. The ingest statement (src/db/ingest.ts) links
-- every new event by it, beside the children its parser named.
CREATE FUNCTION event_names(source text, event_id text, raw jsonb)
  RETURNS TABLE (provider text, account_id text, conversation_id text, message_id text)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
WITH named (provider, account_id, conversation_id, message_id) AS (
  -- UnifyPort: one event; the child of `message.received` is (provider, account_id, data.conversation.id,
  -- data.message.id), and an event of another type names the same fields when it has them.
  SELECT event_identity_part(raw -> 'provider'), event_identity_part(raw -> 'account_id'),
         event_identity_part(raw #> '{data,conversation,id}'), event_identity_part(raw #> '{data,message,id}')
   WHERE source = 'unifyport'
  UNION ALL
  -- Telegram: one Update; the account is the bot id, the event id's part before `:` (`<bot id>:<update_id>`).
  -- The update's object (its one field besides update_id) holds the chat — or, for a callback query, its
  -- message does —, scoped `<business_connection_id>:<chat.id>` in a business chat; it names its
  -- message_id (0: not sent yet, no identity) and a `deleted_business_messages` each of its message_ids.
  SELECT 'telegram', split_part(event_id, ':', 1),
         CASE WHEN m ? 'business_connection_id'
              THEN event_identity_part(m -> 'business_connection_id') || ':' || event_identity_part(m #> '{chat,id}')
              ELSE event_identity_part(m #> '{chat,id}') END,
         NULLIF(child, '0')
    FROM (SELECT CASE WHEN value ? 'chat' THEN value WHEN value -> 'message' ? 'chat' THEN value -> 'message' END AS m
            FROM jsonb_each(CASE WHEN jsonb_typeof(raw) = 'object' THEN raw ELSE '{}' END)
           WHERE key <> 'update_id' AND jsonb_typeof(value) = 'object') u
   CROSS JOIN LATERAL (
     SELECT event_identity_part(m -> 'message_id')
      UNION ALL
     SELECT event_identity_part(id)
       FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m -> 'message_ids') = 'array' THEN m -> 'message_ids' ELSE '[]' END) id
   ) c (child)
   WHERE source = 'telegram' AND m IS NOT NULL
  UNION ALL
  -- LINE: one event of a webhook body with the body's `destination` (the account); a body stored whole
  -- (`events[]`) names what each of its events names. The conversation is source.groupId, else roomId,
  -- else userId; a message names message.id, an unsend unsend.messageId.
  SELECT 'line', event_identity_part(raw -> 'destination'),
         COALESCE(event_identity_part(e #> '{source,groupId}'), event_identity_part(e #> '{source,roomId}'),
                  event_identity_part(e #> '{source,userId}')),
         COALESCE(event_identity_part(e #> '{message,id}'), event_identity_part(e #> '{unsend,messageId}'))
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(raw -> 'events') = 'array' THEN raw -> 'events' ELSE jsonb_build_array(raw) END) e
   WHERE source = 'line'
), scoped AS (
  SELECT * FROM named WHERE provider IS NOT NULL AND account_id IS NOT NULL AND conversation_id IS NOT NULL
)
SELECT DISTINCT s.provider, s.account_id, s.conversation_id, s.message_id FROM scoped s
 WHERE s.message_id IS NOT NULL
    OR NOT EXISTS (SELECT 1 FROM scoped c WHERE c.message_id IS NOT NULL AND (c.provider, c.account_id, c.conversation_id)
                                                                                = (s.provider, s.account_id, s.conversation_id))
$$;

-- Every event stored so far, linked by what its body names.
INSERT INTO event_links (event_pk, workspace, provider, account_id, conversation_id, message_id)
SELECT e.id, e.workspace, n.provider, n.account_id, n.conversation_id, n.message_id
  FROM events e CROSS JOIN LATERAL event_names(e.source, e.event_id, e.raw) n
ON CONFLICT DO NOTHING;
-- And by the child child_identity named (for an event whose body says otherwise), while it is stored.
INSERT INTO event_links (event_pk, workspace, provider, account_id, conversation_id, message_id)
SELECT e.id, e.workspace, m.provider, m.account_id, m.conversation_id, m.message_id
  FROM events e
  JOIN messages m ON child_identity(m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id) = e.child_identity
ON CONFLICT DO NOTHING;

DROP INDEX events_child, events_unlinked_age;
ALTER TABLE events DROP COLUMN child_identity;
-- Retention removes, by age, the events no stored child is linked to.
CREATE INDEX events_age ON events (last_received_at);
-- A conversation's erasure reads its workspace's quarantined bodies.
CREATE INDEX quarantine_workspace ON quarantine (workspace);

-- Down Migration
DROP INDEX quarantine_workspace, events_age;
ALTER TABLE events ADD COLUMN child_identity bytea;
UPDATE events e SET child_identity = child_identity(e.workspace, l.provider, l.account_id, l.conversation_id, l.message_id)
  FROM event_links l WHERE l.event_pk = e.id AND l.message_id IS NOT NULL;
CREATE INDEX events_child ON events (child_identity) WHERE child_identity IS NOT NULL;
CREATE INDEX events_unlinked_age ON events (last_received_at) WHERE child_identity IS NULL;
DROP TABLE event_links;
DROP FUNCTION event_names, event_identity_part;
