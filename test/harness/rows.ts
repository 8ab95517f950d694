// Typed readers of the rows albumflow stores, for the checks of the tests, the fault suite and the bench:
// each table's reader answers the columns asked for (its own and a few computed ones, such as a message's
// album workflow id or outbox rows) of the rows a filter picks, in a stable order, or counts them; and the
// aggregates the bench and the fault suite poll while a run settles, computed by PostgreSQL.
import type { DecisionRow } from '../../src/db/decisions.js';
import type { Queryable } from '../../src/db/pool.js';

/** How one table is read: its FROM clause, each column's expression, each filter's condition on its parameter. */
interface TableSpec<Row, Filter> {
  from: string;
  columns: { [C in keyof Row]: string };
  filters: { [F in keyof Filter]-?: (param: string) => string };
  orderBy: ReadonlyArray<keyof Row>;
}

export interface ReadOptions<Row> {
  /** Default: the table's natural order (ids, or keys). */
  orderBy?: ReadonlyArray<keyof Row>;
  descending?: boolean;
  limit?: number;
}

export interface TableReader<Row, Filter> {
  /** The columns asked for (default every column) of the rows `filter` picks; an undefined filter field picks every row. */
  read<C extends keyof Row = keyof Row>(
    db: Queryable,
    filter: Filter,
    columns?: readonly C[],
    options?: ReadOptions<Row>,
  ): Promise<Array<Pick<Row, C>>>;
  count(db: Queryable, filter: Filter): Promise<number>;
}

function table<Row, Filter>(spec: TableSpec<Row, Filter>): TableReader<Row, Filter> {
  const where = (filter: Filter) => {
    const params: unknown[] = [];
    const conditions = (Object.entries(filter as Record<string, unknown>) as Array<[keyof Filter, unknown]>)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => {
        params.push(value);
        return spec.filters[name](`$${params.length}`);
      });
    return { clause: conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '', params };
  };
  const allColumns = Object.keys(spec.columns) as Array<keyof Row>;
  return {
    async read(db, filter, columns, options = {}) {
      const { clause, params } = where(filter);
      const select = (columns ?? allColumns).map((column) => `${spec.columns[column]} AS "${String(column)}"`).join(', ');
      const order = (options.orderBy ?? spec.orderBy).map((column) => `${spec.columns[column]}${options.descending ? ' DESC' : ''}`);
      const limit = options.limit === undefined ? '' : ` LIMIT ${Math.floor(options.limit)}`;
      const { rows } = await db.query(`SELECT ${select} FROM ${spec.from}${clause} ORDER BY ${order.join(', ')}${limit}`, params);
      return rows as never;
    },
    async count(db, filter) {
      const { clause, params } = where(filter);
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${spec.from}${clause}`, params);
      return rows[0]!.n;
    },
  };
}

export interface MessageRow {
  id: string;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
  album_pk: string | null;
  /** The album's own id and workflow id (null for a standalone message). */
  album_id: string | null;
  album_workflow_id: string | null;
  album_meta: unknown;
  album_index: number | null;
  album_total: number | null;
  metadata_invalid: boolean;
  caption: string | null;
  sent_at: Date | null;
  raw: Record<string, unknown>;
  first_received_at: Date;
  last_received_at: Date;
  delivery_count: number;
  /** The transaction that last wrote the row (xmin). */
  txid: string;
  /** Its rows in the outbox. */
  outbox: number;
  /** Earlier versions kept by edits (message_history). */
  versions: number;
  /** Its attachments as position, kind, url and status, in order; null without any. */
  attachments: Array<{ position: number; kind: string | null; url: string | null; status: string }> | null;
}

export interface MessageFilter {
  workspace?: string;
  provider?: string;
  accountId?: string;
  conversationId?: string;
  messageId?: string;
  /** Children of these album workflows. */
  albumWorkflowIds?: readonly string[];
  /** Only standalone messages (no album). */
  standalone?: true;
}

/** The columns a child's delivery writes of what its event says (album metadata, caption, sent_at, the body) and its deliveries. */
export const deliveredColumns = [
  'album_meta',
  'album_index',
  'album_total',
  'metadata_invalid',
  'caption',
  'sent_at',
  'delivery_count',
  'raw',
] as const satisfies ReadonlyArray<keyof MessageRow>;

export const messages = table<MessageRow, MessageFilter>({
  from: 'messages m LEFT JOIN albums al ON al.id = m.album_pk',
  columns: {
    id: 'm.id',
    workspace: 'm.workspace',
    provider: 'm.provider',
    account_id: 'm.account_id',
    conversation_id: 'm.conversation_id',
    message_id: 'm.message_id',
    album_pk: 'm.album_pk',
    album_id: 'al.album_id',
    album_workflow_id: 'al.workflow_id',
    album_meta: 'm.album_meta',
    album_index: 'm.album_index',
    album_total: 'm.album_total',
    metadata_invalid: 'm.metadata_invalid',
    caption: 'm.caption',
    sent_at: 'm.sent_at',
    raw: 'm.raw',
    first_received_at: 'm.first_received_at',
    last_received_at: 'm.last_received_at',
    delivery_count: 'm.delivery_count',
    txid: 'm.xmin::text',
    outbox: '(SELECT count(*)::int FROM outbox o WHERE o.message_pk = m.id)',
    versions: '(SELECT count(*)::int FROM message_history h WHERE h.message_pk = m.id)',
    attachments: `(SELECT json_agg(json_build_object('position', a.position, 'kind', a.kind, 'url', a.url, 'status', a.status)
                                   ORDER BY a.position)
                     FROM attachments a WHERE a.message_pk = m.id)`,
  },
  filters: {
    workspace: (p) => `m.workspace = ${p}`,
    provider: (p) => `m.provider = ${p}`,
    accountId: (p) => `m.account_id = ${p}`,
    conversationId: (p) => `m.conversation_id = ${p}`,
    messageId: (p) => `m.message_id = ${p}`,
    albumWorkflowIds: (p) => `al.workflow_id = ANY(${p}::text[])`,
    standalone: (p) => `(m.album_pk IS NULL) = ${p}`,
  },
  orderBy: ['id'],
});

export interface AttachmentRow {
  message_pk: string;
  position: number;
  kind: string | null;
  url: string | null;
  mime_type: string | null;
  declared_size: string | null;
  file_name: string | null;
  status: string;
  content_type: string | null;
  bytes: string | null;
  sha256: string | null;
  error: string | null;
  attempts: number;
  updated_at: Date;
  /** Its child's identity. */
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  message_id: string;
}

export interface AttachmentFilter {
  workspace?: string;
  conversationId?: string;
  messageId?: string;
  messagePk?: string;
  position?: number;
  status?: string;
  /** Only attachments with an error. */
  failed?: true;
}

export const attachments = table<AttachmentRow, AttachmentFilter>({
  from: 'attachments a JOIN messages m ON m.id = a.message_pk',
  columns: {
    message_pk: 'a.message_pk',
    position: 'a.position',
    kind: 'a.kind',
    url: 'a.url',
    mime_type: 'a.mime_type',
    declared_size: 'a.declared_size',
    file_name: 'a.file_name',
    status: 'a.status',
    content_type: 'a.content_type',
    bytes: 'a.bytes',
    sha256: 'a.sha256',
    error: 'a.error',
    attempts: 'a.attempts',
    updated_at: 'a.updated_at',
    workspace: 'm.workspace',
    provider: 'm.provider',
    account_id: 'm.account_id',
    conversation_id: 'm.conversation_id',
    message_id: 'm.message_id',
  },
  filters: {
    workspace: (p) => `m.workspace = ${p}`,
    conversationId: (p) => `m.conversation_id = ${p}`,
    messageId: (p) => `m.message_id = ${p}`,
    messagePk: (p) => `a.message_pk = ${p}`,
    position: (p) => `a.position = ${p}`,
    status: (p) => `a.status = ${p}`,
    failed: (p) => `(a.error IS NOT NULL) = ${p}`,
  },
  orderBy: ['message_pk', 'position'],
});

export interface AlbumRow {
  id: string;
  workspace: string;
  provider: string;
  account_id: string;
  conversation_id: string;
  album_id: string;
  workflow_id: string;
  state: string;
  review_reasons: string[];
  first_received_at: Date;
  last_received_at: Date;
  updated_at: Date;
  /** Its children, and the deliveries of all of them. */
  children: number;
  deliveries: number;
}

export interface AlbumFilter {
  workspace?: string;
  accountId?: string;
  accountIds?: readonly string[];
  albumId?: string;
  workflowId?: string;
  /** Only albums not closed yet. */
  open?: true;
}

export const albums = table<AlbumRow, AlbumFilter>({
  from: 'albums al',
  columns: {
    id: 'al.id',
    workspace: 'al.workspace',
    provider: 'al.provider',
    account_id: 'al.account_id',
    conversation_id: 'al.conversation_id',
    album_id: 'al.album_id',
    workflow_id: 'al.workflow_id',
    state: 'al.state',
    review_reasons: 'al.review_reasons',
    first_received_at: 'al.first_received_at',
    last_received_at: 'al.last_received_at',
    updated_at: 'al.updated_at',
    children: '(SELECT count(*)::int FROM messages m WHERE m.album_pk = al.id)',
    deliveries: '(SELECT coalesce(sum(m.delivery_count), 0)::int FROM messages m WHERE m.album_pk = al.id)',
  },
  filters: {
    workspace: (p) => `al.workspace = ${p}`,
    accountId: (p) => `al.account_id = ${p}`,
    accountIds: (p) => `al.account_id = ANY(${p}::text[])`,
    albumId: (p) => `al.album_id = ${p}`,
    workflowId: (p) => `al.workflow_id = ${p}`,
    open: (p) => `(al.state <> 'closed') = ${p}`,
  },
  orderBy: ['id'],
});

export interface EventRow {
  id: string;
  workspace: string;
  source: string;
  event_id: string;
  type: string | null;
  first_received_at: Date;
  last_received_at: Date;
  delivery_count: number;
  raw: unknown;
}

export interface EventFilter {
  workspace?: string;
  source?: string;
  eventId?: string;
  eventIds?: readonly string[];
}

export const events = table<EventRow, EventFilter>({
  from: 'events',
  columns: {
    id: 'id',
    workspace: 'workspace',
    source: 'source',
    event_id: 'event_id',
    type: 'type',
    first_received_at: 'first_received_at',
    last_received_at: 'last_received_at',
    delivery_count: 'delivery_count',
    raw: 'raw',
  },
  filters: {
    workspace: (p) => `workspace = ${p}`,
    source: (p) => `source = ${p}`,
    eventId: (p) => `event_id = ${p}`,
    eventIds: (p) => `event_id = ANY(${p}::text[])`,
  },
  orderBy: ['id'],
});

export interface QuarantineRow {
  id: string;
  workspace: string;
  reason: string;
  detail: string | null;
  raw: Buffer;
  received_at: Date;
}

export const quarantine = table<QuarantineRow, { workspace?: string; reason?: string }>({
  from: 'quarantine',
  columns: { id: 'id', workspace: 'workspace', reason: 'reason', detail: 'detail', raw: 'raw', received_at: 'received_at' },
  filters: { workspace: (p) => `workspace = ${p}`, reason: (p) => `reason = ${p}` },
  orderBy: ['id'],
});

export interface OutboxEntry {
  id: string;
  message_pk: string;
  created_at: Date;
  available_at: Date;
  attempts: number;
  last_error: string | null;
  /** Its child's workspace and message id. */
  workspace: string;
  message_id: string;
}

export const outbox = table<OutboxEntry, { workspace?: string; messagePk?: string }>({
  from: 'outbox o JOIN messages m ON m.id = o.message_pk',
  columns: {
    id: 'o.id',
    message_pk: 'o.message_pk',
    created_at: 'o.created_at',
    available_at: 'o.available_at',
    attempts: 'o.attempts',
    last_error: 'o.last_error',
    workspace: 'm.workspace',
    message_id: 'm.message_id',
  },
  filters: { workspace: (p) => `m.workspace = ${p}`, messagePk: (p) => `o.message_pk = ${p}` },
  orderBy: ['id'],
});

export interface DecisionEntry extends DecisionRow {
  recorded_at: Date;
  /** When it was recorded, epoch ms. */
  recorded_ms: number;
  /** How many children it includes. */
  children: number;
}

export const decisions = table<DecisionEntry, { workflowId?: string; workflowIds?: readonly string[] }>({
  from: 'decisions',
  columns: {
    workflow_id: 'workflow_id',
    seq: 'seq',
    trigger: 'trigger',
    child_message_ids: 'child_message_ids',
    decided_at: 'decided_at',
    recorded_at: 'recorded_at',
    recorded_ms: 'extract(epoch FROM recorded_at)::float8 * 1000',
    children: 'cardinality(child_message_ids)',
  },
  filters: { workflowId: (p) => `workflow_id = ${p}`, workflowIds: (p) => `workflow_id = ANY(${p}::text[])` },
  orderBy: ['workflow_id', 'seq'],
});

export interface NotificationEntry {
  id: string;
  workflow_id: string;
  workspace: string | null;
  type: string;
  payload: unknown;
  created_at: Date;
  /** Seconds since it was stored, by PostgreSQL's clock. */
  age_s: number;
}

export const notifications = table<NotificationEntry, { id?: string; workflowId?: string; workflowIds?: readonly string[]; type?: string }>(
  {
    from: 'notifications',
    columns: {
      id: 'id',
      workflow_id: 'workflow_id',
      workspace: 'workspace',
      type: 'type',
      payload: 'payload',
      created_at: 'created_at',
      age_s: 'extract(epoch FROM now() - created_at)::int',
    },
    filters: {
      id: (p) => `id = ${p}`,
      workflowId: (p) => `workflow_id = ${p}`,
      workflowIds: (p) => `workflow_id = ANY(${p}::text[])`,
      type: (p) => `type = ${p}`,
    },
    orderBy: ['created_at', 'id'],
  },
);

export interface DeliveryAttemptEntry {
  id: string;
  delivery_id: string;
  status_code: number | null;
  error: string | null;
  response: string | null;
}

/** Every attempt of outbound delivery: what each receiver answered. */
export const deliveryAttempts = table<DeliveryAttemptEntry, Record<string, never>>({
  from: 'delivery_attempts',
  columns: { id: 'id', delivery_id: 'delivery_id::text', status_code: 'status_code', error: 'error', response: 'response' },
  filters: {},
  orderBy: ['id'],
});

export interface OperatorActionRow {
  id: string;
  workflow_id: string;
  action: string;
  detail: unknown;
  requested_by: string | null;
  at: Date;
}

export const operatorActions = table<OperatorActionRow, { workflowId?: string }>({
  from: 'operator_actions',
  columns: { id: 'id', workflow_id: 'workflow_id', action: 'action', detail: 'detail', requested_by: 'requested_by', at: 'at' },
  filters: { workflowId: (p) => `workflow_id = ${p}` },
  orderBy: ['id'],
});

export interface ConsoleSessionRow {
  id_digest: Buffer;
  token_digest: Buffer;
  created_at: Date;
  expires_at: Date;
  last_seen_at: Date;
}

export const consoleSessions = table<ConsoleSessionRow, { idDigest?: Buffer }>({
  from: 'console_sessions',
  columns: {
    id_digest: 'id_digest',
    token_digest: 'token_digest',
    created_at: 'created_at',
    expires_at: 'expires_at',
    last_seen_at: 'last_seen_at',
  },
  filters: { idDigest: (p) => `id_digest = ${p}` },
  orderBy: ['created_at', 'id_digest'],
});

/** The decisions PostgreSQL recorded for one workflow, in order. */
export function storedDecisions(db: Queryable, workflowId: string) {
  return decisions.read(db, { workflowId }, ['seq', 'trigger', 'child_message_ids']);
}

/** A notification as the tests read it back, its payload typed. */
export interface NotificationRow {
  id: string;
  type: string;
  /** The notification's data: the body's `data` without its `id` and its media links. */
  payload: {
    album?: { state: string; distinctChildren: number; media: Record<string, number>; review: { reasons: string[] } };
    message?: { state: string; media: Record<string, number> };
    decision: { seq: number; trigger: string; childMessageIds: string[]; lateChildMessageIds?: string[]; lateItemPolicy?: string };
  };
}

/** The notifications of one workflow, in the order they were stored. */
export async function storedNotifications(db: Queryable, workflowId: string): Promise<NotificationRow[]> {
  return (await notifications.read(db, { workflowId }, ['id', 'type', 'payload'])) as NotificationRow[];
}

/** One album's state and review reasons. */
export async function albumRow(db: Queryable, workflowId: string): Promise<{ state: string; review_reasons: string[] }> {
  return (await albums.read(db, { workflowId }, ['state', 'review_reasons']))[0]!;
}

/** Rows of every table the webhook writes (events, messages, quarantine), for one workspace. */
export async function webhookRows(db: Queryable, workspace: string): Promise<number> {
  const counts = await Promise.all([
    events.count(db, { workspace }),
    messages.count(db, { workspace }),
    quarantine.count(db, { workspace }),
  ]);
  return counts.reduce((sum, n) => sum + n, 0);
}

/** A recorded decision, with when it was recorded (epoch ms). */
export type RecordedDecision = Pick<DecisionEntry, 'workflow_id' | 'seq' | 'trigger' | 'child_message_ids' | 'recorded_ms'>;

/** Each workflow's recorded decisions, in order, with when they were recorded. */
export async function recordedDecisions(db: Queryable, workflowIds: string[]): Promise<Map<string, RecordedDecision[]>> {
  const rows = await decisions.read(db, { workflowIds }, ['workflow_id', 'seq', 'trigger', 'child_message_ids', 'recorded_ms']);
  const byWorkflow = new Map<string, RecordedDecision[]>();
  for (const row of rows) {
    const list = byWorkflow.get(row.workflow_id) ?? [];
    list.push(row);
    byWorkflow.set(row.workflow_id, list);
  }
  return byWorkflow;
}

/**
 * When each workflow's first `album.media_settled` notice of a decision was stored, epoch ms, by the seq of
 * that decision (a decision whose media were reopened by a redelivered URL has later notices too).
 */
export async function mediaSettledOf(db: Queryable, workflowIds: string[]): Promise<Map<string, Map<number, number>>> {
  const { rows } = await db.query<{ workflow_id: string; seq: number; created_ms: number }>(
    `SELECT workflow_id, (payload->'decision'->>'seq')::int AS seq, extract(epoch FROM min(created_at))::float8 * 1000 AS created_ms
       FROM notifications WHERE type = 'album.media_settled' AND workflow_id = ANY($1::text[])
      GROUP BY 1, 2`,
    [workflowIds],
  );
  const byWorkflow = new Map<string, Map<number, number>>();
  for (const row of rows) {
    const bySeq = byWorkflow.get(row.workflow_id) ?? new Map<number, number>();
    bySeq.set(row.seq, row.created_ms);
    byWorkflow.set(row.workflow_id, bySeq);
  }
  return byWorkflow;
}

/** `<workflow id> <message id>` of every child stored under these album workflows. */
export async function storedChildren(db: Queryable, workflowIds: string[]): Promise<Set<string>> {
  const rows = await messages.read(db, { albumWorkflowIds: workflowIds }, ['album_workflow_id', 'message_id']);
  return new Set(rows.map((row) => `${row.album_workflow_id} ${row.message_id}`));
}

/** `album.ready` notifications per workflow (of these workflows, or of all; workflows without one left out). */
export async function albumReadyCounts(db: Queryable, workflowIds?: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ workflow_id: string; n: number }>(
    `SELECT workflow_id, count(*)::int AS n FROM notifications
      WHERE type = 'album.ready'${workflowIds ? ' AND workflow_id = ANY($1::text[])' : ''} GROUP BY workflow_id`,
    workflowIds ? [workflowIds] : [],
  );
  return new Map(rows.map((row) => [row.workflow_id, row.n]));
}

export interface AttachmentOutcomes {
  /** Attachments with a URL, by status (`pending` until their download settled). */
  byStatus: Record<string, number>;
  /** Bytes of the downloaded ones. */
  bytes: number;
}

/** The outcomes of the attachments with a URL of these album workflows' children. */
export async function attachmentOutcomes(db: Queryable, workflowIds: string[]): Promise<AttachmentOutcomes> {
  const { rows } = await db.query<{ status: string; n: number; bytes: string | null }>(
    `SELECT t.status, count(*)::int AS n, sum(t.bytes)::text AS bytes
       FROM attachments t JOIN messages m ON m.id = t.message_pk JOIN albums a ON a.id = m.album_pk
      WHERE a.workflow_id = ANY($1::text[]) AND t.url IS NOT NULL
      GROUP BY t.status`,
    [workflowIds],
  );
  return {
    byStatus: Object.fromEntries(rows.map((row) => [row.status, row.n])),
    bytes: rows.reduce((sum, row) => sum + Number(row.bytes ?? 0), 0),
  };
}

/** What the pipeline still has to do: outbox rows, pending downloads, albums not closed, pending deliveries. */
export async function pipelineBacklog(db: Queryable): Promise<{ outbox: number; pending: number; open: number; notifying: number }> {
  const { rows } = await db.query<{ outbox: number; pending: number; open: number; notifying: number }>(
    `SELECT (SELECT count(*) FROM outbox)::int AS outbox,
            (SELECT count(*) FROM attachments WHERE status = 'pending')::int AS pending,
            (SELECT count(*) FROM albums WHERE state <> 'closed')::int AS open,
            (SELECT count(*) FROM deliveries WHERE state = 'pending')::int AS notifying`,
  );
  return rows[0]!;
}

export async function serverVersion(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ server_version: string }>('SHOW server_version');
  return rows[0]!.server_version;
}
