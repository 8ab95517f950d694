// Every statement of the bench's own against PostgreSQL: its databases' life, and what it reads of the
// app's tables to check and time a run (the app's statements, src/db/, where one serves).
import type { DecisionRow } from '../src/db/decisions.js';
import type { Pool } from '../src/db/pool.js';

/** A recorded decision, with when it was recorded (epoch ms). */
export type RecordedDecision = Pick<DecisionRow, 'workflow_id' | 'seq' | 'trigger' | 'child_message_ids'> & { recorded_ms: number };

/** Each workflow's recorded decisions, in order, with when they were recorded. */
export async function recordedDecisions(pool: Pool, workflowIds: string[]): Promise<Map<string, RecordedDecision[]>> {
  const { rows } = await pool.query<RecordedDecision>(
    `SELECT workflow_id, seq, trigger, child_message_ids, extract(epoch FROM recorded_at)::float8 * 1000 AS recorded_ms
       FROM decisions WHERE workflow_id = ANY($1::text[]) ORDER BY workflow_id, seq`,
    [workflowIds],
  );
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
export async function mediaSettledOf(pool: Pool, workflowIds: string[]): Promise<Map<string, Map<number, number>>> {
  const { rows } = await pool.query<{ workflow_id: string; seq: number; created_ms: number }>(
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

/** `<workflow id> <message id>` of every child stored under these workflows. */
export async function storedChildren(pool: Pool, workflowIds: string[]): Promise<Set<string>> {
  const { rows } = await pool.query<{ workflow_id: string; message_id: string }>(
    `SELECT a.workflow_id, m.message_id FROM messages m JOIN albums a ON a.id = m.album_pk WHERE a.workflow_id = ANY($1::text[])`,
    [workflowIds],
  );
  return new Set(rows.map((row) => `${row.workflow_id} ${row.message_id}`));
}

export async function openAlbums(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ open: number }>(`SELECT count(*)::int AS open FROM albums WHERE state <> 'closed'`);
  return rows[0]!.open;
}

/** `album.ready` notifications per workflow (workflows without one left out). */
export async function albumReadyCounts(pool: Pool, workflowIds: string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ workflow_id: string; n: number }>(
    `SELECT workflow_id, count(*)::int AS n FROM notifications
      WHERE type = 'album.ready' AND workflow_id = ANY($1::text[]) GROUP BY workflow_id`,
    [workflowIds],
  );
  return new Map(rows.map((row) => [row.workflow_id, row.n]));
}

export interface AttachmentOutcomes {
  /** Attachments with a URL, by status (`pending` until their download settled). */
  byStatus: Record<string, number>;
  /** Bytes of the downloaded ones. */
  bytes: number;
}

export async function attachmentOutcomes(pool: Pool, workflowIds: string[]): Promise<AttachmentOutcomes> {
  const { rows } = await pool.query<{ status: string; n: number; bytes: string | null }>(
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

export async function serverVersion(pool: Pool): Promise<string> {
  const { rows } = await pool.query<{ server_version: string }>('SHOW server_version');
  return rows[0]!.server_version;
}
