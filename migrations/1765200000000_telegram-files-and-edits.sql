-- Up Migration

-- The route an album's first child came by: it says what the album's platform promises (a Telegram
-- album holds at most ten items, and orders by message_id).
ALTER TABLE albums
  ADD COLUMN source text NOT NULL DEFAULT 'unifyport' CHECK (source IN ('unifyport', 'telegram'));

-- A Telegram file has no URL: the download asks getFile for it by telegram_file_id, with the bot's token.
-- telegram_file_unique_id is the same file for every bot and over time; an edit that changes it replaced
-- the media. Pixels for photos, videos, animations, stickers and video notes.
ALTER TABLE attachments
  ADD COLUMN telegram_file_id        text,
  ADD COLUMN telegram_file_unique_id text,
  ADD COLUMN width                   integer,
  ADD COLUMN height                  integer;

-- The edit_date of the newest edit applied to the message: an edit redelivered out of order, older than
-- this, changes nothing.
ALTER TABLE messages ADD COLUMN edited_at timestamptz;

-- Every earlier version of a message that an edit replaced, oldest first: its caption, and whether that
-- edit also replaced the media.
CREATE TABLE message_history (
  message_pk     bigint      NOT NULL REFERENCES messages (id),
  version        integer     NOT NULL CHECK (version >= 1),
  caption        text,
  media_replaced boolean     NOT NULL,
  -- The edit_date of the edit that replaced this version.
  replaced_at    timestamptz NOT NULL,
  recorded_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_pk, version)
);

-- Down Migration
DROP TABLE message_history;
ALTER TABLE messages DROP COLUMN edited_at;
ALTER TABLE attachments
  DROP COLUMN telegram_file_id,
  DROP COLUMN telegram_file_unique_id,
  DROP COLUMN width,
  DROP COLUMN height;
ALTER TABLE albums DROP COLUMN source;
