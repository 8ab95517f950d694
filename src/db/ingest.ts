import { albumKeyString, albumWorkflowId, childKeyString } from '../domain/keys.js';
import type { AlbumKey, EventSource, MessageKey } from '../domain/types.js';
import type { AttachmentInput, ChildMessage } from '../domain/child.js';
import type { Queryable } from './pool.js';

/** A verified, validated child event ready to store. `raw` is the body text, stored as received. */
export interface ChildDelivery {
  source: EventSource;
  eventId: string;
  type: string;
  raw: string;
  child: ChildMessage;
  /** The W3C traceparent of the request's span (tracing on and sampled), kept with the new child and its outbox row. */
  traceparent?: string;
}

/** A new version of a child (a Telegram `edited_*` update): its caption and media as they are now. */
export interface EditDelivery extends ChildDelivery {
  /** The edit's `edit_date` (ISO 8601): only an edit newer than the one applied last changes the child. */
  editedAt: string;
}

/** A verified event of another type: only the event is recorded. */
export interface EventRecord {
  workspace: string;
  source: EventSource;
  eventId: string;
  type: string;
  raw: string;
  /** The children it names besides the one it delivers (a withdrawal's): linked to it (event_links). */
  names?: readonly MessageKey[];
}

/** What one webhook request stores. */
export type Delivery = ChildDelivery | EventRecord;

export interface IngestResult {
  /** The child was already stored (a redelivery, under the same or another event id), or was erased. */
  duplicate: boolean;
  /** The child was erased (a tombstone holds its identity): nothing of it, nor its event, was stored. */
  erased: boolean;
  childKey: string;
  albumKey: string | null;
}

export interface StoredDeliveries {
  /** One per delivery, in order: the child's result, or null for an event of another type. */
  results: Array<IngestResult | null>;
  /** Outbox rows inserted (the outbox's trigger announces them to every dispatcher). */
  queued: number;
}

/** Stores one child and commits; the caller may answer 2xx once this resolves. */
export async function ingestChild(db: Queryable, delivery: ChildDelivery): Promise<IngestResult> {
  const { results } = await storeDeliveries(db, [delivery]);
  return results[0]!;
}

/**
 * Stores deliveries with one statement, atomic on its own (or part of the caller's transaction), with
 * the outcome each would have had stored one after the other in this order: every event is recorded
 * (a redelivered id counts a delivery; a new one is linked to the children and the conversation it
 * names, event_links), every album is created on its first child and touched on the
 * next, every child is stored once (its redeliveries counted, a caption or sent_at missing so far filled
 * in, never erased), every attachment position once (a position without a URL takes the URL of a later
 * delivery and becomes pending again), and each child that is new or gained a URL is queued in the
 * outbox.
 *
 * An edit is stored this way only as the first delivery of its child (storeEdit, src/db/edits.ts): a new
 * child takes its `edited_at`; a stored one is left as it is (storeEdit applies the edit).
 *
 * A child whose identity has a live tombstone (it was erased, src/db/purge.ts) is not stored again:
 * neither it, nor its event, nor an album only it names.
 *
 * One round trip per batch (it was eight, from BEGIN to COMMIT): on a busy machine each round trip waits
 * for the ingress and a PostgreSQL backend to be scheduled. A multi-row upsert may not
 * touch one row twice, so the deliveries of one event, child or attachment position are merged first
 * (mergeDeliveries). Within each table the rows are locked in key order (albums by workflow id), and
 * every execution of this one statement visits the tables in the same order, so concurrent batches wait
 * for each other and do not deadlock. The statement is named: each connection parses and plans it once.
 */
export async function storeDeliveries(db: Queryable, deliveries: readonly (Delivery | EditDelivery)[]): Promise<StoredDeliveries> {
  const merged = mergeDeliveries(deliveries);
  const values = statementValues(merged);
  const { rows } = await db.query<StoredRow>({ name: 'albumflow_ingest', text: storeStatement, values });
  const storedKeys = [...merged.children.keys()];
  // inserted: true (new), false (stored before), null (erased).
  const inserted = new Map(rows.flatMap((row) => (row.ord === null ? [] : [[storedKeys[row.ord - 1]!, row.inserted] as const])));
  const results = deliveries.map((delivery, index): IngestResult | null => {
    if (!('child' in delivery)) return null;
    const childKey = merged.childKeys[index]!;
    const isNew = inserted.get(childKey);
    if (isNew === undefined) throw new Error(`child ${childKey} was neither inserted nor found`);
    return {
      duplicate: !isNew || merged.children.get(childKey)!.firstIndex !== index,
      erased: isNew === null,
      childKey,
      albumKey: delivery.child.albumKey ? albumKeyString(delivery.child.albumKey) : null,
    };
  });
  return { results, queued: rows.find((row) => row.ord === null)!.queued! };
}

/** One row per child (its 1-based place in `children`; inserted null when erased), and one (ord null) with the outbox count. */
interface StoredRow {
  ord: number | null;
  inserted: boolean | null;
  queued: number | null;
}

/** What one statement writes: each event, album, child and attachment position once. */
interface MergedDeliveries {
  /**
   * With the key of the child each delivered, if any (not stored again once erased), and every child it
   * names, that one included (its raw events go when any of them is erased or purged).
   */
  events: Array<EventRecord & { deliveries: number; child: MessageKey | null; named: readonly MessageKey[] }>;
  /** By workflow id, with the route of its first child and every child that named it. */
  albums: Map<string, { key: AlbumKey; source: EventSource; children: Set<string> }>;
  /** By child key string, in the order of first delivery. */
  children: Map<string, MergedChild>;
  /** Each delivery's child key string, in delivery order; null for an event of another type. */
  childKeys: Array<string | null>;
}

interface MergedChild {
  /** The first delivery's child: its album, metadata and raw body are the ones stored. */
  child: ChildMessage;
  /** The workflow id of the first delivery's album; null for a standalone message. */
  albumWorkflowId: string | null;
  raw: string;
  /** The first delivery's edit_date when it is an edit (stored as the child only if the child is new). */
  editedAt: string | null;
  /** Index of the first delivery in the batch: the one reported as not a duplicate, if the child is new. */
  firstIndex: number;
  /** The traceparent of the first delivery that has one: its request queued the child. */
  traceparent: string | null;
  deliveries: number;
  caption: string | null;
  sentAt: string | null;
  attachments: Map<number, AttachmentInput>;
}

/**
 * Folds repeated deliveries into one row each, as storing them one after the other would leave it:
 * an event counts its deliveries; a child keeps its first delivery, its first caption and sent_at, and
 * each attachment position its first delivery's values, or, when that had no URL, the first URL
 * delivered later with the values missing so far. Pure.
 */
function mergeDeliveries(deliveries: readonly (Delivery | EditDelivery)[]): MergedDeliveries {
  const events = new Map<string, EventRecord & { deliveries: number; child: MessageKey | null; named: readonly MessageKey[] }>();
  const albums = new Map<string, { key: AlbumKey; source: EventSource; children: Set<string> }>();
  const children = new Map<string, MergedChild>();
  const childKeys: Array<string | null> = [];
  deliveries.forEach((delivery, index) => {
    const event = eventOf(delivery);
    const eventKey = JSON.stringify([event.workspace, event.source, event.eventId]);
    const seen = events.get(eventKey);
    if (seen) seen.deliveries += 1;
    else {
      const child = 'child' in delivery ? delivery.child.key : null;
      events.set(eventKey, { ...event, deliveries: 1, child, named: [...(child ? [child] : []), ...(event.names ?? [])] });
    }
    if (!('child' in delivery)) {
      childKeys.push(null);
      return;
    }

    const { child, raw, source } = delivery;
    const childKey = childKeyString(child.key);
    let albumId: string | null = null;
    if (child.albumKey) {
      albumId = albumWorkflowId(child.albumKey);
      const album = albums.get(albumId) ?? { key: child.albumKey, source, children: new Set<string>() };
      album.children.add(childKey);
      albums.set(albumId, album);
    }
    childKeys.push(childKey);
    const merged = children.get(childKey);
    if (!merged) {
      const attachments = new Map(child.attachments.map((attachment) => [attachment.position, { ...attachment }]));
      const editedAt = 'editedAt' in delivery ? delivery.editedAt : null;
      children.set(childKey, {
        child,
        albumWorkflowId: albumId,
        raw,
        editedAt,
        firstIndex: index,
        traceparent: delivery.traceparent ?? null,
        deliveries: 1,
        caption: child.caption,
        sentAt: child.sentAt,
        attachments,
      });
      return;
    }
    merged.deliveries += 1;
    merged.traceparent ??= delivery.traceparent ?? null;
    merged.caption ??= child.caption;
    merged.sentAt ??= child.sentAt;
    for (const attachment of child.attachments) {
      const kept = merged.attachments.get(attachment.position);
      if (!kept) merged.attachments.set(attachment.position, { ...attachment });
      else if (kept.url === null && attachment.url !== null) {
        merged.attachments.set(attachment.position, {
          position: attachment.position,
          url: attachment.url,
          kind: kept.kind ?? attachment.kind,
          mimeType: kept.mimeType ?? attachment.mimeType,
          declaredSize: kept.declaredSize ?? attachment.declaredSize,
          fileName: kept.fileName ?? attachment.fileName,
          telegramFile: kept.telegramFile ?? attachment.telegramFile,
          lineChannel: kept.lineChannel ?? attachment.lineChannel,
        });
      }
    }
  });
  return { events: [...events.values()], albums, children, childKeys };
}

/** The statement's four parameters: one JSON array of records per table, every field named. */
function statementValues({ events, albums, children }: MergedDeliveries): [string, string, string, string] {
  const merged = [...children.values()];
  const ords = new Map([...children.keys()].map((childKey, i) => [childKey, i + 1]));
  return [
    JSON.stringify(
      events.map((e) => ({
        workspace: e.workspace,
        source: e.source,
        event_id: e.eventId,
        type: e.type,
        raw: e.raw,
        deliveries: e.deliveries,
        child: e.child && [e.child.workspace, e.child.provider, e.child.accountId, e.child.conversationId, e.child.messageId],
        named: e.named.map((key) => [key.provider, key.accountId, key.conversationId, key.messageId]),
      })),
    ),
    JSON.stringify(
      [...albums.entries()].map(([workflowId, { key, source, children: named }]) => ({
        workspace: key.workspace,
        provider: key.provider,
        account_id: key.accountId,
        conversation_id: key.conversationId,
        album_id: key.albumId,
        workflow_id: workflowId,
        source,
        child_ords: [...named].map((childKey) => ords.get(childKey)!),
      })),
    ),
    JSON.stringify(
      merged.map(({ child, albumWorkflowId, raw, editedAt, deliveries, caption, sentAt, traceparent }, i) => ({
        ord: i + 1,
        workspace: child.key.workspace,
        provider: child.key.provider,
        account_id: child.key.accountId,
        conversation_id: child.key.conversationId,
        message_id: child.key.messageId,
        album_workflow_id: albumWorkflowId,
        album_meta: child.album?.raw ?? null,
        album_index: child.album?.index ?? null,
        album_total: child.album?.total ?? null,
        metadata_invalid: child.album?.metadataInvalid ?? false,
        caption,
        sent_at: sentAt,
        edited_at: editedAt,
        raw,
        deliveries,
        traceparent,
      })),
    ),
    JSON.stringify(
      merged.flatMap(({ attachments }, i) => [...attachments.values()].map((a) => ({ child_ord: i + 1, ...attachmentRecord(a) }))),
    ),
  ];
}

/** An attachment as the statements read it from JSON: every column named. */
export function attachmentRecord(a: AttachmentInput) {
  return {
    position: a.position,
    kind: a.kind,
    url: a.url,
    mime_type: a.mimeType,
    declared_size: a.declaredSize,
    file_name: a.fileName,
    telegram_file_id: a.telegramFile?.fileId ?? null,
    telegram_file_unique_id: a.telegramFile?.fileUniqueId ?? null,
    width: a.telegramFile?.width ?? null,
    height: a.telegramFile?.height ?? null,
    still_telegram_file_id: a.telegramFile?.still?.fileId ?? null,
    still_telegram_file_unique_id: a.telegramFile?.still?.fileUniqueId ?? null,
    line_channel: a.lineChannel,
  };
}

function eventOf(delivery: Delivery): EventRecord {
  if (!('child' in delivery)) return delivery;
  return {
    workspace: delivery.child.key.workspace,
    source: delivery.source,
    eventId: delivery.eventId,
    type: delivery.type,
    raw: delivery.raw,
  };
}

/**
 * The albums are upserted on their workflow id (the only unique key besides id: see migration
 * 1764480000000), so an album a concurrent transaction inserts is waited for and then touched, never
 * missed. DO UPDATE on albums and messages takes a FOR NO KEY UPDATE lock, which does not hold up the
 * foreign-key checks of other transactions' children.
 */
const storeStatement = `
WITH children_in AS (
  SELECT m.*, child_identity(m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id) AS identity
    FROM jsonb_to_recordset($3::jsonb)
      AS m (ord int, workspace text, provider text, account_id text, conversation_id text, message_id text,
            album_workflow_id text, album_meta jsonb, album_index int, album_total int, metadata_invalid bool,
            caption text, sent_at timestamptz, edited_at timestamptz, raw text, deliveries int, traceparent text)
), erased AS (
  SELECT m.ord, m.identity FROM children_in m JOIN tombstones t ON t.identity = m.identity AND t.expires_at > now()
), events_in AS (
  SELECT e.*, CASE WHEN e.child IS NULL THEN NULL ELSE child_identity(e.child->>0, e.child->>1, e.child->>2, e.child->>3, e.child->>4) END AS identity
    FROM jsonb_to_recordset($1::jsonb)
      AS e (workspace text, source text, event_id text, type text, raw text, deliveries int, child jsonb, named jsonb)
), stored_events AS (
  INSERT INTO events (workspace, source, event_id, type, raw, delivery_count)
  SELECT e.workspace, e.source, e.event_id, e.type, e.raw::jsonb, e.deliveries FROM events_in e
   WHERE e.identity IS NULL OR e.identity NOT IN (SELECT identity FROM erased)
   ORDER BY e.workspace, e.source, e.event_id
  ON CONFLICT (workspace, source, event_id) DO UPDATE
    SET delivery_count = events.delivery_count + EXCLUDED.delivery_count, last_received_at = now()
  RETURNING id, (xmax = 0) AS inserted, workspace, source, event_id, raw
), stored_links AS (
  -- A new event is linked to what its body names (event_names, migration 1766400000000) and to the
  -- children its parser named: its conversation even when it names no child.
  INSERT INTO event_links (event_pk, workspace, provider, account_id, conversation_id, message_id)
  SELECT DISTINCT s.id, s.workspace, l.provider, l.account_id, l.conversation_id, l.message_id
    FROM stored_events s JOIN events_in e USING (workspace, source, event_id)
   CROSS JOIN LATERAL (
     SELECT n.provider, n.account_id, n.conversation_id, n.message_id FROM event_names(s.source, s.event_id, s.raw) n
      UNION
     SELECT k->>0, k->>1, k->>2, k->>3 FROM jsonb_array_elements(e.named) k
   ) l
   WHERE s.inserted
  ON CONFLICT DO NOTHING
), stored_albums AS (
  INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id, source)
  SELECT a.workspace, a.provider, a.account_id, a.conversation_id, a.album_id, a.workflow_id, a.source
    FROM jsonb_to_recordset($2::jsonb)
      AS a (workspace text, provider text, account_id text, conversation_id text, album_id text, workflow_id text, source text,
            child_ords jsonb)
   -- An album only erased children name is not created again.
   WHERE EXISTS (SELECT 1 FROM jsonb_array_elements_text(a.child_ords) o WHERE o::int NOT IN (SELECT ord FROM erased))
   ORDER BY a.workflow_id
  ON CONFLICT (workflow_id) DO UPDATE SET last_received_at = now()
  RETURNING id, workflow_id
), stored_children AS (
  INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, album_meta,
                        album_index, album_total, metadata_invalid, caption, sent_at, edited_at, raw, delivery_count, traceparent)
  SELECT m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id, a.id, m.album_meta,
         m.album_index, m.album_total, m.metadata_invalid, m.caption, m.sent_at, m.edited_at, m.raw::jsonb, m.deliveries, m.traceparent
    FROM children_in m LEFT JOIN stored_albums a ON a.workflow_id = m.album_workflow_id
   WHERE m.ord NOT IN (SELECT ord FROM erased)
   ORDER BY m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id
  ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE
    SET delivery_count = messages.delivery_count + CASE WHEN EXCLUDED.edited_at IS NULL THEN EXCLUDED.delivery_count ELSE 0 END,
        last_received_at = now(),
        -- A caption an edit set (even to none) is only ever changed by a newer edit.
        caption = CASE WHEN messages.edited_at IS NULL AND EXCLUDED.edited_at IS NULL THEN COALESCE(messages.caption, EXCLUDED.caption)
                       ELSE messages.caption END,
        sent_at = COALESCE(messages.sent_at, EXCLUDED.sent_at)
  RETURNING id, (xmax = 0) AS inserted, workspace, provider, account_id, conversation_id, message_id
), children AS (
  SELECT s.id, s.inserted, m.ord, m.traceparent FROM stored_children s JOIN children_in m USING (workspace, provider, account_id, conversation_id, message_id)
), stored_attachments AS (
  INSERT INTO attachments (message_pk, position, kind, url, mime_type, declared_size, file_name,
                           telegram_file_id, telegram_file_unique_id, width, height, still_telegram_file_id,
                           still_telegram_file_unique_id, line_channel, status)
  SELECT c.id, a.position, a.kind, a.url, a.mime_type, a.declared_size, a.file_name,
         a.telegram_file_id, a.telegram_file_unique_id, a.width, a.height, a.still_telegram_file_id,
         a.still_telegram_file_unique_id, a.line_channel,
         CASE WHEN a.url IS NULL AND a.telegram_file_id IS NULL AND a.line_channel IS NULL THEN 'unavailable' ELSE 'pending' END
    FROM jsonb_to_recordset($4::jsonb)
           AS a (child_ord int, position int, kind text, url text, mime_type text, declared_size bigint, file_name text,
                 telegram_file_id text, telegram_file_unique_id text, width int, height int, still_telegram_file_id text,
                 still_telegram_file_unique_id text, line_channel text)
    JOIN children c ON c.ord = a.child_ord
   ORDER BY c.id, a.position
  ON CONFLICT (message_pk, position) DO UPDATE
    SET url = EXCLUDED.url,
        status = 'pending',
        kind = COALESCE(attachments.kind, EXCLUDED.kind),
        mime_type = COALESCE(attachments.mime_type, EXCLUDED.mime_type),
        declared_size = COALESCE(attachments.declared_size, EXCLUDED.declared_size),
        file_name = COALESCE(attachments.file_name, EXCLUDED.file_name),
        updated_at = now()
    WHERE attachments.url IS NULL AND EXCLUDED.url IS NOT NULL
  RETURNING message_pk
), queued AS (
  INSERT INTO outbox (message_pk, traceparent)
  SELECT id, traceparent FROM children WHERE inserted
   UNION
  SELECT c.id, c.traceparent FROM children c WHERE c.id IN (SELECT message_pk FROM stored_attachments)
   ORDER BY 1
  RETURNING 1
)
SELECT NULL::int AS ord, NULL::boolean AS inserted, (SELECT count(*)::int FROM queued) AS queued
 UNION ALL
SELECT ord, inserted, NULL FROM children
 UNION ALL
SELECT ord, NULL, NULL FROM erased`;

export interface QuarantineRecord {
  workspace: string;
  reason: string;
  detail: string;
  raw: Buffer;
}

/** Keeps a verified body that could not be stored as a child, byte for byte, with the reason. */
export async function quarantine(db: Queryable, record: QuarantineRecord): Promise<void> {
  await db.query(`INSERT INTO quarantine (workspace, reason, detail, raw) VALUES ($1, $2, $3, $4)`, [
    record.workspace,
    record.reason,
    record.detail,
    record.raw,
  ]);
}

/** PostgreSQL refused a value of the event itself (class 22: e.g. `\u0000` or a lone surrogate in jsonb). */
export function isDataException(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}
