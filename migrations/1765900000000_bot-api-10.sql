-- Up Migration

-- Bot API 10.x (docs/telegram.md). A live photo is one attachment: its video is the attachment's file
-- (telegram_file_id, status, content_type, bytes, sha256), and its still is a second file of the same
-- attachment, downloaded through getFile beside the video and shown as its thumbnail. The still's object
-- is referenced by the attachment as its sha256 is: kept while the attachment is, collected with it.
ALTER TABLE attachments
  ADD COLUMN still_telegram_file_id        text,
  ADD COLUMN still_telegram_file_unique_id text,
  ADD COLUMN still_content_type            text,
  ADD COLUMN still_bytes                   bigint,
  ADD COLUMN still_sha256                  text;

-- The collector and the media routes look a hash up among the stills as among the files.
CREATE INDEX attachments_still_sha256 ON attachments (still_sha256) WHERE still_sha256 IS NOT NULL;

-- How the message was withdrawn (withdrawn_at): 'unsent' by its sender (LINE's `unsend`), 'deleted' from a
-- connected business account (Telegram's `deleted_business_messages`). NULL for a message withdrawn
-- before this column: LINE's, unsent.
ALTER TABLE messages ADD COLUMN withdrawal text CHECK (withdrawal IN ('unsent', 'deleted'));

-- Down Migration
ALTER TABLE messages DROP COLUMN withdrawal;
DROP INDEX attachments_still_sha256;
ALTER TABLE attachments
  DROP COLUMN still_telegram_file_id,
  DROP COLUMN still_telegram_file_unique_id,
  DROP COLUMN still_content_type,
  DROP COLUMN still_bytes,
  DROP COLUMN still_sha256;
