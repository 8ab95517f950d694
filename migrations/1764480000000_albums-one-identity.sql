-- Up Migration

-- An album's identity is its workflow id (album:<workspace>:<provider>:<account>:<conversation>:<album>,
-- each part URL-encoded, so one tuple gives one id and back). A second unique constraint on the same
-- tuple kept the ingest from resolving an album with INSERT … ON CONFLICT (workflow_id) DO UPDATE:
-- a concurrent first insert tripped it with an error instead of taking the conflict path.
ALTER TABLE albums DROP CONSTRAINT albums_workspace_provider_account_id_conversation_id_album__key;

-- Down Migration
ALTER TABLE albums ADD CONSTRAINT albums_workspace_provider_account_id_conversation_id_album__key
  UNIQUE (workspace, provider, account_id, conversation_id, album_id);
