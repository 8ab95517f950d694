import type { ChildArrival, EarlierVersion, EventSource, JsonValue, MessageKey, WithdrawalChange } from '../domain/types.js';
import type { Queryable } from './pool.js';

/** A committed child as its workflow receives it; `albumId` is null for a standalone message. */
export interface QueuedChild {
  messagePk: string;
  key: MessageKey;
  albumPk: string | null;
  albumId: string | null;
  /** The route of the album's first child; null for a standalone message. */
  albumSource: EventSource | null;
  arrival: ChildArrival;
}

interface QueuedChildRow {
  message_pk: string;
  album_pk: string | null;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  album_id: string | null;
  album_source: EventSource | null;
  album_meta: JsonValue | null;
  album_index: number | null;
  album_total: number | null;
  metadata_invalid: boolean;
  caption: string | null;
  sent_at: Date | null;
  first_received_at: Date;
  attachments: ChildArrival['attachments'];
  history: HistoryColumns[];
  withdrawn_at: Date | null;
  withdrawal: WithdrawalChange | null;
}

/** One `message_history` row as json_agg gives it (timestamps in PostgreSQL's text form). */
export interface HistoryColumns {
  caption: string | null;
  media_replaced: boolean;
  replaced_at: string;
  recorded_at: string;
}

/** The earlier versions of a message, oldest first, as json_agg of `message_history` rows; '[]' when none. */
export const historyColumn = `
  COALESCE((SELECT json_agg(json_build_object('caption', h.caption, 'media_replaced', h.media_replaced,
                                              'replaced_at', h.replaced_at, 'recorded_at', h.recorded_at) ORDER BY h.version)
              FROM message_history h WHERE h.message_pk = m.id), '[]')`;

export function earlierVersionOf(row: HistoryColumns): EarlierVersion {
  return {
    caption: row.caption,
    mediaReplaced: row.media_replaced,
    replacedAt: new Date(row.replaced_at).toISOString(),
    recordedAt: new Date(row.recorded_at).toISOString(),
  };
}

/** The stored children with these row ids, as their workflows receive them (in no particular order). */
export async function loadChildren(client: Queryable, messagePks: string[]): Promise<QueuedChild[]> {
  const { rows } = await client.query<QueuedChildRow>(
    `SELECT m.id AS message_pk, m.album_pk, m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id,
            al.album_id, al.source AS album_source, m.album_meta, m.album_index, m.album_total, m.metadata_invalid, m.caption, m.sent_at,
            m.first_received_at,
            COALESCE(
              (SELECT json_agg(CASE WHEN a.line_channel IS NULL
                                    THEN json_build_object('position', a.position, 'url', a.url, 'mimeType', a.mime_type,
                                                           'telegramFileUniqueId', a.telegram_file_unique_id)
                                    ELSE json_build_object('position', a.position, 'url', a.url, 'mimeType', a.mime_type,
                                                           'telegramFileUniqueId', a.telegram_file_unique_id,
                                                           'lineChannel', a.line_channel) END
                               ORDER BY a.position)
                 FROM attachments a WHERE a.message_pk = m.id),
              '[]') AS attachments,
            ${historyColumn} AS history, m.withdrawn_at, m.withdrawal
       FROM messages m
       LEFT JOIN albums al ON al.id = m.album_pk
      WHERE m.id = ANY($1::bigint[])`,
    [messagePks],
  );
  return rows.map((row) => ({
    messagePk: row.message_pk,
    key: {
      workspace: row.workspace,
      provider: row.provider,
      accountId: row.account_id,
      conversationId: row.conversation_id,
      messageId: row.message_id,
    },
    albumPk: row.album_pk,
    albumId: row.album_id,
    albumSource: row.album_source,
    arrival: {
      messageId: row.message_id,
      index: row.album_index,
      total: row.album_total,
      metadataInvalid: row.metadata_invalid,
      albumMeta: albumMeta(row.album_meta),
      caption: row.caption,
      sentAt: row.sent_at?.toISOString() ?? null,
      receivedAt: row.first_received_at.toISOString(),
      attachments: row.attachments,
      history: row.history.map(earlierVersionOf),
      // A message withdrawn before withdrawals had a word was LINE's, unsent.
      ...(row.withdrawn_at ? { withdrawnAt: row.withdrawn_at.toISOString(), withdrawal: row.withdrawal ?? 'unsent' } : {}),
    },
  }));
}

/** The `index` and `total` of the album object as received, whatever their type. */
function albumMeta(stored: JsonValue | null): ChildArrival['albumMeta'] {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return null;
  const meta: NonNullable<ChildArrival['albumMeta']> = {};
  if (stored.index !== undefined) meta.index = stored.index;
  if (stored.total !== undefined) meta.total = stored.total;
  return meta;
}
