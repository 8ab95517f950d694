import { albumKeyString, albumWorkflowId, childKeyString } from '../../workflows/keys.js';
import type { AlbumKey } from '../../workflows/types.js';
import type { AttachmentInput, ChildMessage } from '../http/event.js';
import { outboxChannel } from './outbox.js';
import type { Pool, PoolClient } from './pool.js';
import { withTransaction } from './transaction.js';

/** The event source of every UnifyPort webhook (the `source` of the events table). */
export const unifyportSource = 'unifyport';

type Queryable = Pick<PoolClient, 'query'>;

/** A verified, validated child event ready to store. `raw` is the body text, stored as received. */
export interface ChildDelivery {
  eventId: string;
  type: string;
  raw: string;
  child: ChildMessage;
}

/** A verified event of another type: only the event is recorded. */
export interface EventRecord {
  workspace: string;
  eventId: string;
  type: string;
  raw: string;
}

/** What one webhook request stores. */
export type Delivery = ChildDelivery | EventRecord;

export interface IngestResult {
  /** The child was already stored (a redelivery, under the same or another event id). */
  duplicate: boolean;
  childKey: string;
  albumKey: string | null;
}

export interface StoredDeliveries {
  /** One per delivery, in order: the child's result, or null for an event of another type. */
  results: Array<IngestResult | null>;
  /** Outbox rows inserted (and announced on the outbox channel). */
  queued: number;
}

/** Stores deliveries in one transaction of their own and commits; their requests may be answered once this resolves. */
export async function storeInTransaction(pool: Pool, deliveries: readonly Delivery[]): Promise<StoredDeliveries> {
  return withTransaction(pool, (client) => storeDeliveries(client, deliveries));
}

/** Stores one child in one transaction and commits; the caller may answer 2xx once this resolves. */
export async function ingestChild(pool: Pool, delivery: ChildDelivery): Promise<IngestResult> {
  const { results } = await storeInTransaction(pool, [delivery]);
  return results[0]!;
}

/**
 * The statements of several deliveries, inside the caller's transaction, with the outcome each would
 * have had stored one after the other in this order: the events, the albums, the children, their
 * attachments, and an outbox row per child that is new or gained a URL, announced once.
 *
 * A multi-row upsert may not touch one row twice, so repeated events and children are written in
 * rounds (the second delivery of a child in the second round, …). Every statement takes its row locks
 * in key order, and the albums that concurrent batches share are locked last, so batches wait for
 * each other briefly and never deadlock. The statements are named: each connection parses and plans
 * them once.
 */
export async function storeDeliveries(client: Queryable, deliveries: readonly Delivery[]): Promise<StoredDeliveries> {
  for (const round of rounds(deliveries.map(eventOf), (event) => JSON.stringify([event.workspace, event.eventId]))) {
    await recordEvents(client, round);
  }

  const children = deliveries.flatMap((delivery, index) => ('child' in delivery ? [{ index, delivery }] : []));
  const albumKeys = children.flatMap(({ delivery }) => (delivery.child.albumKey ? [delivery.child.albumKey] : []));
  const albums = albumKeys.length > 0 ? await resolveAlbums(client, albumKeys) : { pks: new Map<string, string>(), existing: [] };

  const results: Array<IngestResult | null> = deliveries.map(() => null);
  const queued: string[] = [];
  for (const round of rounds(children, ({ delivery }) => childKeyString(delivery.child.key))) {
    const messages = await upsertMessages(
      client,
      round.map(({ delivery: { child, raw } }) => ({ child, raw, albumPk: child.albumKey ? albums.pks.get(albumWorkflowId(child.albumKey))! : null })),
    );
    const updated = await upsertAttachments(
      client,
      round.map(({ delivery }, i) => ({ messagePk: messages[i]!.id, attachments: delivery.child.attachments })),
    );
    round.forEach(({ index, delivery: { child } }, i) => {
      const message = messages[i]!;
      if (message.inserted || updated.has(message.id)) queued.push(message.id);
      results[index] = {
        duplicate: !message.inserted,
        childKey: childKeyString(child.key),
        albumKey: child.albumKey ? albumKeyString(child.albumKey) : null,
      };
    });
  }
  await touchAlbumsAndQueue(client, albums.existing, queued);
  return { results, queued: queued.length };
}

function eventOf(delivery: Delivery): EventRecord {
  if (!('child' in delivery)) return delivery;
  return { workspace: delivery.child.key.workspace, eventId: delivery.eventId, type: delivery.type, raw: delivery.raw };
}

/** Splits items into rounds in which no key appears twice: an item goes to the round of its key's occurrence. */
function rounds<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const occurrences = new Map<string, number>();
  const result: T[][] = [];
  for (const item of items) {
    const key = keyOf(item);
    const occurrence = occurrences.get(key) ?? 0;
    occurrences.set(key, occurrence + 1);
    (result[occurrence] ??= []).push(item);
  }
  return result;
}

/** Records verified events, each id at most once; a redelivery (same workspace, source and id) bumps its delivery count. */
async function recordEvents(db: Queryable, events: readonly EventRecord[]): Promise<void> {
  await db.query({
    name: 'albumflow_ingest_events',
    text: `INSERT INTO events (workspace, source, event_id, type, raw)
     SELECT e.workspace, $1, e.event_id, e.type, e.raw
       FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[]) AS e (workspace, event_id, type, raw)
      ORDER BY e.workspace, e.event_id
     ON CONFLICT (workspace, source, event_id) DO UPDATE
       SET delivery_count = events.delivery_count + 1, last_received_at = now()`,
    values: [
      unifyportSource,
      events.map((e) => e.workspace),
      events.map((e) => e.eventId),
      events.map((e) => e.type),
      events.map((e) => e.raw),
    ],
  });
}

/**
 * The albums' rows by workflow id, each created on its first child; `existing` are the ones this
 * transaction did not create, to be touched at the end. Not INSERT … ON CONFLICT DO UPDATE: albums has
 * a second unique constraint (workflow_id), and a concurrent first insert would violate it instead of
 * taking the conflict path; ON CONFLICT DO NOTHING without a target covers both.
 */
async function resolveAlbums(db: Queryable, keys: readonly AlbumKey[]): Promise<{ pks: Map<string, string>; existing: string[] }> {
  const wanted = [...new Map(keys.map((key) => [albumWorkflowId(key), key])).values()];
  const { rows } = await db.query<{ id: string; workflow_id: string; created: boolean }>({
    name: 'albumflow_ingest_albums',
    text: `WITH wanted AS (
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
               AS w (workspace, provider, account_id, conversation_id, album_id, workflow_id)
           ), found AS (
             SELECT a.id, a.workflow_id FROM albums a JOIN wanted w ON w.workflow_id = a.workflow_id
           ), created AS (
             INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id)
             SELECT w.workspace, w.provider, w.account_id, w.conversation_id, w.album_id, w.workflow_id
               FROM wanted w
              WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.workflow_id = w.workflow_id)
              ORDER BY w.workflow_id
             ON CONFLICT DO NOTHING
             RETURNING id, workflow_id
           )
           SELECT id, workflow_id, false AS created FROM found
           UNION ALL
           SELECT id, workflow_id, true AS created FROM created`,
    values: [
      wanted.map((k) => k.workspace),
      wanted.map((k) => k.provider),
      wanted.map((k) => k.accountId),
      wanted.map((k) => k.conversationId),
      wanted.map((k) => k.albumId),
      wanted.map((k) => albumWorkflowId(k)),
    ],
  });
  const pks = new Map(rows.map((row) => [row.workflow_id, row.id]));
  const existing = rows.filter((row) => !row.created).map((row) => row.id);
  const raced = wanted.map((key) => albumWorkflowId(key)).filter((workflowId) => !pks.has(workflowId));
  if (raced.length > 0) {
    // Committed by another transaction after this statement's snapshot; the next statement sees them.
    const { rows: committed } = await db.query<{ id: string; workflow_id: string }>({
      name: 'albumflow_ingest_raced_albums',
      text: `SELECT id, workflow_id FROM albums WHERE workflow_id = ANY($1::text[])`,
      values: [raced],
    });
    for (const row of committed) {
      pks.set(row.workflow_id, row.id);
      existing.push(row.id);
    }
  }
  const lost = raced.find((workflowId) => !pks.has(workflowId));
  if (lost) throw new Error(`album ${lost} was neither inserted nor found`);
  return { pks, existing };
}

interface MessageInput {
  child: ChildMessage;
  albumPk: string | null;
  raw: string;
}

/**
 * Distinct children, returned in the order given. A redelivery keeps the first stored values; a caption
 * or sent_at missing so far is filled in, never erased.
 */
async function upsertMessages(db: Queryable, inputs: readonly MessageInput[]): Promise<Array<{ id: string; inserted: boolean }>> {
  const { rows } = await db.query<{
    id: string;
    inserted: boolean;
    workspace: string;
    provider: string;
    account_id: string;
    conversation_id: string;
    message_id: string;
  }>({
    name: 'albumflow_ingest_messages',
    text: `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, album_meta,
                           album_index, album_total, metadata_invalid, caption, sent_at, raw)
     SELECT m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id, m.album_pk, m.album_meta,
            m.album_index, m.album_total, m.metadata_invalid, m.caption, m.sent_at, m.raw
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::jsonb[],
                   $8::int[], $9::int[], $10::bool[], $11::text[], $12::timestamptz[], $13::jsonb[])
         AS m (workspace, provider, account_id, conversation_id, message_id, album_pk, album_meta,
               album_index, album_total, metadata_invalid, caption, sent_at, raw)
      ORDER BY m.workspace, m.provider, m.account_id, m.conversation_id, m.message_id
     ON CONFLICT (workspace, provider, account_id, conversation_id, message_id) DO UPDATE
       SET delivery_count = messages.delivery_count + 1,
           last_received_at = now(),
           caption = COALESCE(messages.caption, EXCLUDED.caption),
           sent_at = COALESCE(messages.sent_at, EXCLUDED.sent_at)
     RETURNING id, (xmax = 0) AS inserted, workspace, provider, account_id, conversation_id, message_id`,
    values: [
      inputs.map(({ child }) => child.key.workspace),
      inputs.map(({ child }) => child.key.provider),
      inputs.map(({ child }) => child.key.accountId),
      inputs.map(({ child }) => child.key.conversationId),
      inputs.map(({ child }) => child.key.messageId),
      inputs.map(({ albumPk }) => albumPk),
      inputs.map(({ child }) => (child.album ? JSON.stringify(child.album.raw) : null)),
      inputs.map(({ child }) => child.album?.index ?? null),
      inputs.map(({ child }) => child.album?.total ?? null),
      inputs.map(({ child }) => child.album?.metadataInvalid ?? false),
      inputs.map(({ child }) => child.caption),
      inputs.map(({ child }) => child.sentAt),
      inputs.map(({ raw }) => raw),
    ],
  });
  const byKey = new Map(
    rows.map((row) => [
      childKeyString({
        workspace: row.workspace,
        provider: row.provider,
        accountId: row.account_id,
        conversationId: row.conversation_id,
        messageId: row.message_id,
      }),
      row,
    ]),
  );
  return inputs.map(({ child }) => byKey.get(childKeyString(child.key))!);
}

/**
 * One row per attachment position. A position stored without a URL takes the URL of a later delivery
 * and becomes pending again. Returns the children with a row inserted or given a URL.
 */
async function upsertAttachments(
  db: Queryable,
  children: ReadonlyArray<{ messagePk: string; attachments: readonly AttachmentInput[] }>,
): Promise<Set<string>> {
  const rows = children.flatMap(({ messagePk, attachments }) => attachments.map((attachment) => ({ messagePk, ...attachment })));
  if (rows.length === 0) return new Set();
  const { rows: changed } = await db.query<{ message_pk: string }>({
    name: 'albumflow_ingest_attachments',
    text: `INSERT INTO attachments (message_pk, position, kind, url, mime_type, declared_size, file_name, status)
     SELECT a.message_pk, a.position, a.kind, a.url, a.mime_type, a.declared_size, a.file_name,
            CASE WHEN a.url IS NULL THEN 'unavailable' ELSE 'pending' END
       FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
         AS a (message_pk, position, kind, url, mime_type, declared_size, file_name)
      ORDER BY a.message_pk, a.position
     ON CONFLICT (message_pk, position) DO UPDATE
       SET url = EXCLUDED.url,
           status = 'pending',
           kind = COALESCE(attachments.kind, EXCLUDED.kind),
           mime_type = COALESCE(attachments.mime_type, EXCLUDED.mime_type),
           declared_size = COALESCE(attachments.declared_size, EXCLUDED.declared_size),
           file_name = COALESCE(attachments.file_name, EXCLUDED.file_name),
           updated_at = now()
       WHERE attachments.url IS NULL AND EXCLUDED.url IS NOT NULL
     RETURNING message_pk`,
    values: [
      rows.map((a) => a.messagePk),
      rows.map((a) => a.position),
      rows.map((a) => a.kind),
      rows.map((a) => a.url),
      rows.map((a) => a.mimeType),
      rows.map((a) => a.declaredSize),
      rows.map((a) => a.fileName),
    ],
  });
  return new Set(changed.map((row) => row.message_pk));
}

/**
 * The last statements before COMMIT: touches the albums that existed, which concurrent batches share
 * (locked in id order, so their locks are held briefly and in one order), and queues the children for
 * their workflows, notifying the dispatchers once. FOR NO KEY UPDATE, as the touch itself takes, does
 * not hold up children of other transactions that reference the album.
 */
async function touchAlbumsAndQueue(db: Queryable, albumPks: readonly string[], messagePks: readonly string[]): Promise<void> {
  if (albumPks.length > 1) {
    await db.query({
      name: 'albumflow_ingest_lock_albums',
      text: `SELECT FROM albums WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`,
      values: [albumPks],
    });
  }
  if (albumPks.length === 0 && messagePks.length === 0) return;
  await db.query({
    name: 'albumflow_ingest_touch_and_queue',
    text: `WITH touched AS (
             UPDATE albums SET last_received_at = now() WHERE id = ANY($1::bigint[])
           ), queued AS (
             INSERT INTO outbox (message_pk) SELECT unnest($2::bigint[])
           )
           SELECT pg_notify($3, '') WHERE cardinality($2::bigint[]) > 0`,
    values: [albumPks, messagePks, outboxChannel],
  });
}

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
