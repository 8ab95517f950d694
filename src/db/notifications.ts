import type { Pool } from './pool.js';

/** `album.media_settled` notices stored for one decision of a workflow. */
export async function mediaSettledNotices(pool: Pool, workflowId: string, seq: number): Promise<number> {
  const { rows } = await pool.query<{ notices: number }>(
    `SELECT count(*)::int AS notices FROM notifications
      WHERE workflow_id = $1 AND type = 'album.media_settled' AND (id = $2 OR starts_with(id, $2 || '/'))`,
    [workflowId, `${workflowId}/${seq}/album.media_settled`],
  );
  return rows[0]!.notices;
}

/**
 * The message ids whose withdrawal the workflow notified with an `album.updated` (`"change": "unsent"` or
 * `"deleted"`, the withdrawn child under the key the change names).
 */
export async function unsentNotices(pool: Pool, workflowId: string): Promise<string[]> {
  const { rows } = await pool.query<{ message_id: string }>(
    `SELECT DISTINCT payload->(payload->>'change')->>'messageId' AS message_id
       FROM notifications
      WHERE workflow_id = $1 AND type = 'album.updated' AND payload->>'change' IN ('unsent', 'deleted')
      ORDER BY 1`,
    [workflowId],
  );
  return rows.map((row) => row.message_id);
}

/** By message id, the last version whose edit the workflow notified with an `album.updated` (`"change": "edited"`). */
export async function editNotices(pool: Pool, workflowId: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ message_id: string; version: number }>(
    `SELECT payload->'edit'->>'messageId' AS message_id, max((payload->'edit'->>'version')::int) AS version
       FROM notifications
      WHERE workflow_id = $1 AND type = 'album.updated' AND payload->>'change' = 'edited'
      GROUP BY 1`,
    [workflowId],
  );
  return Object.fromEntries(rows.map((row) => [row.message_id, row.version]));
}

/** The last decision seq of an earlier album under this workflow id that a purge removed; null when there was none. */
export async function lastPurgedSeq(pool: Pool, workflowId: string): Promise<number | null> {
  const { rows } = await pool.query<{ last_seq: number }>(`SELECT last_seq FROM notification_counters WHERE workflow_id = $1`, [
    workflowId,
  ]);
  return rows[0]?.last_seq ?? null;
}
