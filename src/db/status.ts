import { buildAlbumView, type ChildWithOutcomes } from '../domain/album-view.js';
import { albumWorkflowId } from '../domain/keys.js';
import type {
  AlbumKey,
  AlbumPhase,
  AlbumView,
  ChildOrder,
  DecisionView,
  EventSource,
  JsonValue,
  MessageKey,
  ReviewReason,
  ReviewResolution,
} from '../domain/types.js';
import { attachmentViewOf, type AttachmentOutcomeColumns } from './attachments.js';
import { earlierVersionOf, historyColumn, type HistoryColumns } from './children.js';
import { decisionsOf } from './decisions.js';
import type { Pool, Queryable } from './pool.js';

export interface AlbumRow {
  id: string;
  workflowId: string;
  /** The platform of its first child (src/platforms/index.ts albumProfileOf: what its albums promise). */
  source: EventSource;
  state: AlbumPhase;
  reviewReasons: ReviewReason[];
  reviewResolved: ReviewResolution | null;
  firstReceivedAt: string;
  lastReceivedAt: string;
}

/** One stored child message as the status views show it. */
export interface StoredMessage extends ChildWithOutcomes {
  lastReceivedAt: string;
  deliveryCount: number;
  albumPk: string | null;
}

const scopeWhere = 'workspace = $1 AND provider = $2 AND account_id = $3 AND conversation_id = $4';
const scopeParams = (key: MessageKey) => [key.workspace, key.provider, key.accountId, key.conversationId];

const iso = (value: Date | null): string | null => (value === null ? null : value.toISOString());

/** The columns of `albums` an AlbumRow is read from. */
interface AlbumColumns {
  id: string;
  workflow_id: string;
  source: EventSource;
  state: AlbumPhase;
  review_reasons: ReviewReason[];
  review_resolved_at: Date | null;
  review_note: string | null;
  first_received_at: Date;
  last_received_at: Date;
}

function albumRowOf(row: AlbumColumns): AlbumRow {
  return {
    id: row.id,
    workflowId: row.workflow_id,
    source: row.source,
    state: row.state,
    reviewReasons: row.review_reasons,
    reviewResolved: row.review_resolved_at === null ? null : { at: row.review_resolved_at.toISOString(), note: row.review_note ?? '' },
    firstReceivedAt: row.first_received_at.toISOString(),
    lastReceivedAt: row.last_received_at.toISOString(),
  };
}

export async function findAlbum(db: Queryable, key: AlbumKey): Promise<AlbumRow | null> {
  const { rows } = await db.query<AlbumColumns>(
    `SELECT id, workflow_id, source, state, review_reasons, review_resolved_at, review_note, first_received_at, last_received_at
       FROM albums WHERE workflow_id = $1`,
    [albumWorkflowId(key)],
  );
  const row = rows[0];
  return row ? albumRowOf(row) : null;
}

interface ChildRow {
  message_id: string;
  album_pk: string | null;
  album_index: number | null;
  album_total: number | null;
  metadata_invalid: boolean;
  album_meta: { index?: JsonValue; total?: JsonValue } | null;
  caption: string | null;
  sent_at: Date | null;
  first_received_at: Date;
  last_received_at: Date;
  delivery_count: number;
  attachments: AttachmentOutcomeColumns[];
  history: HistoryColumns[];
  withdrawn_at: Date | null;
}

const childColumns = `
  m.message_id, m.album_pk, m.album_index, m.album_total, m.metadata_invalid, m.album_meta, m.caption, m.sent_at,
  m.first_received_at, m.last_received_at, m.delivery_count,
  COALESCE((SELECT json_agg(json_build_object(
             'position', a.position, 'status', a.status, 'content_type', a.content_type,
             'bytes', a.bytes, 'sha256', a.sha256, 'error', a.error) ORDER BY a.position)
            FROM attachments a WHERE a.message_pk = m.id), '[]') AS attachments,
  ${historyColumn} AS history, m.withdrawn_at`;

function toChild(row: ChildRow): StoredMessage {
  return {
    messageId: row.message_id,
    index: row.album_index,
    total: row.album_total,
    metadataInvalid: row.metadata_invalid,
    albumMeta: row.album_meta,
    caption: row.caption,
    sentAt: iso(row.sent_at),
    receivedAt: row.first_received_at.toISOString(),
    lastReceivedAt: row.last_received_at.toISOString(),
    deliveryCount: row.delivery_count,
    albumPk: row.album_pk,
    attachments: row.attachments.map(attachmentViewOf),
    history: row.history.map(earlierVersionOf),
    ...(row.withdrawn_at ? { withdrawnAt: row.withdrawn_at.toISOString() } : {}),
  };
}

export async function albumChildren(db: Queryable, albumPk: string): Promise<StoredMessage[]> {
  const { rows } = await db.query<ChildRow>(`SELECT ${childColumns} FROM messages m WHERE m.album_pk = $1`, [albumPk]);
  return rows.map(toChild);
}

export async function findMessage(pool: Pool, key: MessageKey): Promise<(StoredMessage & { albumId: string | null }) | null> {
  const { rows } = await pool.query<ChildRow & { album_id: string | null }>(
    `SELECT ${childColumns}, al.album_id
       FROM messages m LEFT JOIN albums al ON al.id = m.album_pk
      WHERE m.${scopeWhere.replaceAll(' AND ', ' AND m.')} AND m.message_id = $5`,
    [...scopeParams(key), key.messageId],
  );
  const row = rows[0];
  return row ? { ...toChild(row), albumId: row.album_id } : null;
}

/**
 * The album status body as PostgreSQL records it (the same view builder as the workflow's query), from
 * its `children` when they were read already.
 */
export async function albumStatusFromDatabase(
  db: Queryable,
  album: AlbumRow,
  key: AlbumKey,
  view: {
    /** The order of the album's children: its platform's (src/platforms/index.ts albumProfileOf). */
    childOrder: ChildOrder;
    /** Its children, when they were read already. */
    children?: ChildWithOutcomes[];
    /** A decision being recorded in the statement that this view goes with, counted as recorded. */
    deciding?: DecisionView;
  },
): Promise<AlbumView> {
  const [stored, recorded] = await Promise.all([view.children ?? albumChildren(db, album.id), decisionsOf(db, album.workflowId)]);
  const { deciding } = view;
  const decisions = deciding && !recorded.some(({ seq }) => seq === deciding.seq) ? [...recorded, deciding] : recorded;
  return buildAlbumView({
    workflowId: album.workflowId,
    key,
    children: stored,
    decisions,
    reviewReasons: album.reviewReasons,
    reviewResolved: album.reviewResolved,
    closed: album.state === 'closed',
    childOrder: view.childOrder,
  });
}

export interface AlbumListFilter {
  /** The workspaces to list; `'all'` for every one. */
  workspaces: readonly string[] | 'all';
  state?: AlbumPhase;
  review?: boolean;
  provider?: string;
  conversationId?: string;
  /** An album id, or the message id of one of its children. */
  search?: string;
  limit: number;
  /** Continue after this album row id (newest first). */
  afterId?: string;
}

export interface AlbumListRow extends AlbumRow {
  key: AlbumKey;
  distinctChildren: number;
}

export async function listAlbums(pool: Pool, filter: AlbumListFilter): Promise<AlbumListRow[]> {
  const { rows } = await pool.query<
    AlbumColumns & {
      workspace: string;
      provider: string;
      account_id: string;
      conversation_id: string;
      album_id: string;
      distinct_children: number;
    }
  >(
    `SELECT a.*, (SELECT count(*)::int FROM messages m WHERE m.album_pk = a.id) AS distinct_children
       FROM albums a
      WHERE ($1::text[] IS NULL OR a.workspace = ANY ($1))
        AND ($2::text IS NULL OR a.state = $2)
        AND ($3::boolean IS NULL OR (cardinality(a.review_reasons) > 0 AND a.review_resolved_at IS NULL) = $3)
        AND ($4::text IS NULL OR a.provider = $4)
        AND ($5::text IS NULL OR a.conversation_id = $5)
        AND ($6::bigint IS NULL OR a.id < $6)
        AND ($8::text IS NULL OR a.album_id = $8
             OR EXISTS (SELECT 1 FROM messages m WHERE m.album_pk = a.id AND m.message_id = $8))
      ORDER BY a.id DESC
      LIMIT $7`,
    [
      filter.workspaces === 'all' ? null : filter.workspaces,
      filter.state ?? null,
      filter.review ?? null,
      filter.provider ?? null,
      filter.conversationId ?? null,
      filter.afterId ?? null,
      filter.limit,
      filter.search ?? null,
    ],
  );
  return rows.map((row) => ({
    ...albumRowOf(row),
    key: {
      workspace: row.workspace,
      provider: row.provider,
      accountId: row.account_id,
      conversationId: row.conversation_id,
      albumId: row.album_id,
    },
    distinctChildren: row.distinct_children,
  }));
}

/** Albums flagged for review and not resolved (the review queue of the console's list). */
export async function countReviewQueue(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM albums WHERE cardinality(review_reasons) > 0 AND review_resolved_at IS NULL`,
  );
  return rows[0]!.count;
}
