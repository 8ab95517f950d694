import type { NotificationType } from '../domain/types.js';
import type { Pool } from './pool.js';

export type NotificationStatus = 'pending' | 'delivered' | 'recorded' | 'failed';

export interface NotificationRecord {
  id: string;
  workflowId: string;
  type: NotificationType;
  /** The request body, exactly as sent. */
  body: string;
}

/**
 * Stores the notification unless it is stored already, and answers its status either way: one round trip.
 * A row another attempt committed after this statement began is not seen, and the attempt goes on as for
 * a pending one (as two attempts in flight at once always did).
 */
export async function storeNotification(
  pool: Pool,
  n: NotificationRecord,
): Promise<{ status: NotificationStatus; lastError: string | null }> {
  const { rows } = await pool.query<{ status: NotificationStatus; last_error: string | null }>(
    `WITH inserted AS (
       INSERT INTO notifications (id, workflow_id, type, payload) VALUES ($1, $2, $3, $4::jsonb)
       ON CONFLICT (id) DO NOTHING
       RETURNING status, last_error
     )
     SELECT status, last_error FROM inserted
      UNION ALL
     SELECT status, last_error FROM notifications WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`,
    [n.id, n.workflowId, n.type, n.body],
  );
  const row = rows[0]!;
  return { status: row.status, lastError: row.last_error };
}

/** Counts a failed attempt; a refusal for good (not retryable) marks the notification failed. */
export async function recordNotificationFailure(pool: Pool, id: string, error: string, retryable: boolean): Promise<void> {
  await pool.query(
    `UPDATE notifications SET attempts = attempts + 1, last_error = $2,
            status = CASE WHEN $3 THEN status ELSE 'failed' END
      WHERE id = $1`,
    [id, error, retryable],
  );
}

/** Kept in PostgreSQL only (NOTIFY_URL is not set). */
export async function markNotificationRecorded(pool: Pool, id: string): Promise<void> {
  await pool.query(`UPDATE notifications SET status = 'recorded' WHERE id = $1`, [id]);
}

export async function markNotificationDelivered(pool: Pool, id: string): Promise<void> {
  await pool.query(
    `UPDATE notifications SET status = 'delivered', delivered_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1`,
    [id],
  );
}

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
