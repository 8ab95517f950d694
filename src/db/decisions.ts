import type { DecisionRecord, DecisionTrigger, DecisionView, RecordedReview } from '../domain/types.js';
import type { Pool, Queryable } from './pool.js';

/** A row of `decisions`, the columns its readers take (the bench and the tests read it back too). */
export interface DecisionRow {
  workflow_id: string;
  seq: number;
  trigger: DecisionTrigger;
  child_message_ids: string[];
  decided_at: Date;
}

/**
 * The CTEs `decided` and `reviewed` that store one decision with the exact children it included, and the
 * album's review with it, with the parameters from `$<first>` on (decisionParameters). Idempotent by
 * (workflow id, seq): a retry or a replayed workflow never stores it twice.
 */
export function decisionStatement(first: number): string {
  const $ = (n: number) => `$${first + n - 1}`;
  return `decided AS (
       INSERT INTO decisions (workflow_id, seq, trigger, child_message_ids, decided_at)
       VALUES (${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)})
       ON CONFLICT (workflow_id, seq) DO NOTHING
       RETURNING seq
     ), reviewed AS (
       UPDATE albums SET state = 'processed', review_reasons = ${$(6)}, review_resolved_at = ${$(7)}, review_note = ${$(8)}, updated_at = now()
        WHERE ${$(9)} AND workflow_id = ${$(1)}
     )`;
}

export function decisionParameters({ workflowId, decision, album }: DecisionRecord): unknown[] {
  return [
    workflowId,
    decision.seq,
    decision.trigger,
    decision.childMessageIds,
    decision.decidedAt,
    album?.reviewReasons ?? [],
    album?.reviewResolved?.at ?? null,
    album?.reviewResolved?.note ?? null,
    album !== null,
  ];
}

/**
 * Stores one decision (decisionStatement). One statement, not a transaction of two: the album's row is
 * locked only while PostgreSQL runs it, never across a round trip to a worker that the CPU may not schedule
 * for a while (the ingress locks the same row when a child of the album arrives).
 */
export async function insertDecision(db: Queryable, input: DecisionRecord): Promise<{ inserted: boolean }> {
  const { rows } = await db.query<{ inserted: number }>(
    `WITH ${decisionStatement(1)} SELECT count(*)::int AS inserted FROM decided`,
    decisionParameters(input),
  );
  return { inserted: rows[0]?.inserted === 1 };
}

export async function markAlbumClosed(pool: Pool, workflowId: string, review: RecordedReview): Promise<void> {
  await pool.query(
    `UPDATE albums SET state = 'closed', review_reasons = $2, review_resolved_at = $3, review_note = $4, updated_at = now()
      WHERE workflow_id = $1`,
    [workflowId, review.reviewReasons, review.reviewResolved?.at ?? null, review.reviewResolved?.note ?? null],
  );
}

/** Decisions of one workflow, optionally only those that included one message. */
export async function decisionsOf(db: Queryable, workflowId: string, messageId?: string): Promise<DecisionView[]> {
  const { rows } = await db.query<Omit<DecisionRow, 'workflow_id'>>(
    `SELECT seq, trigger, child_message_ids, decided_at FROM decisions
      WHERE workflow_id = $1 AND ($2::text IS NULL OR $2 = ANY (child_message_ids))
      ORDER BY seq`,
    [workflowId, messageId ?? null],
  );
  return rows.map((row) => ({
    seq: row.seq,
    trigger: row.trigger,
    childMessageIds: row.child_message_ids,
    decidedAt: row.decided_at.toISOString(),
  }));
}

/** The traceparents of the requests that stored these children of the album (those that were traced). */
export async function childTraceparents(pool: Pool, workflowId: string, messageIds: readonly string[]): Promise<string[]> {
  const { rows } = await pool.query<{ traceparent: string }>(
    `SELECT m.traceparent FROM messages m JOIN albums a ON a.id = m.album_pk
      WHERE a.workflow_id = $1 AND m.message_id = ANY($2::text[]) AND m.traceparent IS NOT NULL`,
    [workflowId, messageIds],
  );
  return rows.map((row) => row.traceparent);
}

/** The traceparent of the request that made an edit (its version) or withdrew a child of the album; null when it was not traced. */
export async function changeTraceparent(
  pool: Pool,
  workflowId: string,
  change: { messageId: string; version?: number },
): Promise<string | null> {
  const { rows } = await pool.query<{ traceparent: string | null }>(
    `SELECT CASE WHEN $3::int IS NULL THEN m.withdrawn_traceparent
                 ELSE (SELECT h.traceparent FROM message_history h WHERE h.message_pk = m.id AND h.version = $3) END AS traceparent
       FROM messages m JOIN albums a ON a.id = m.album_pk
      WHERE a.workflow_id = $1 AND m.message_id = $2`,
    [workflowId, change.messageId, change.version ?? null],
  );
  return rows[0]?.traceparent ?? null;
}
