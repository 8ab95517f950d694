// Retention's rows (docs/design.md, "Data lifetime"): each workspace's retention, the albums and
// standalone messages that outlived it (purge.ts removes them), and the other rows retention removes by age.
import type { PurgeCounts } from '../domain/lifetime.js';
import { forgetOldRemovals } from './media-collector.js';
import type { Pool, Queryable } from './pool.js';

/**
 * A workspace's retention in days as SQL over `r` (workspace_retention joined on the workspace) and the
 * default ($1, RETENTION_DAYS; null keeps everything): NULL means keep.
 */
const retentionDays = `(CASE WHEN r.workspace IS NULL THEN $1::numeric ELSE r.days END)`;
const expiredBefore = (column: string) => `${column} < now() - ${retentionDays} * interval '1 day'`;

/** Albums closed longer than their workspace's retention, oldest first. */
export async function expiredAlbums(db: Queryable, defaultDays: number | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM albums a LEFT JOIN workspace_retention r ON r.workspace = a.workspace
      WHERE a.state = 'closed' AND ${expiredBefore('a.updated_at')}
      ORDER BY a.updated_at LIMIT $2`,
    [defaultDays, limit],
  );
  return rows.map((row) => row.id);
}

/** Standalone messages last received longer ago than their workspace's retention. */
export async function expiredMessages(db: Queryable, defaultDays: number | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.id FROM messages m LEFT JOIN workspace_retention r ON r.workspace = m.workspace
      WHERE m.album_pk IS NULL AND ${expiredBefore('m.last_received_at')}
      ORDER BY m.last_received_at LIMIT $2`,
    [defaultDays, limit],
  );
  return rows.map((row) => row.id);
}

/**
 * What retention removes besides albums and messages, one bounded batch of each: raw events that name
 * no stored child (other event types, withdrawals of children never stored; an event linked to a
 * stored child goes with it, purge.ts) and quarantined bodies older than their workspace's retention; expired tombstones; the collector's old memory.
 */
export async function purgeAged(pool: Pool, defaultDays: number | null, limit: number): Promise<Partial<PurgeCounts>> {
  const events = await pool.query(
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e LEFT JOIN workspace_retention r ON r.workspace = e.workspace
        WHERE ${expiredBefore('e.last_received_at')}
          AND NOT EXISTS (SELECT 1 FROM event_links l JOIN messages m USING (workspace, provider, account_id, conversation_id, message_id)
                           WHERE l.event_pk = e.id)
        LIMIT $2)`,
    [defaultDays, limit],
  );
  const quarantine = await pool.query(
    `DELETE FROM quarantine WHERE id IN (
       SELECT q.id FROM quarantine q LEFT JOIN workspace_retention r ON r.workspace = q.workspace
        WHERE ${expiredBefore('q.received_at')} LIMIT $2)`,
    [defaultDays, limit],
  );
  const tombstones = await pool.query(
    `DELETE FROM tombstones WHERE identity IN (SELECT identity FROM tombstones WHERE expires_at <= now() LIMIT $1)`,
    [limit],
  );
  await forgetOldRemovals(pool);
  return { events: events.rowCount ?? 0, quarantine: quarantine.rowCount ?? 0, tombstones: tombstones.rowCount ?? 0 };
}

/** Per-workspace retention (workspace_retention): days, null to keep everything; `undefined` takes RETENTION_DAYS again. */
export async function setWorkspaceRetention(db: Queryable, workspace: string, days: number | null | undefined): Promise<void> {
  if (days === undefined) {
    await db.query(`DELETE FROM workspace_retention WHERE workspace = $1`, [workspace]);
    return;
  }
  await db.query(
    `INSERT INTO workspace_retention (workspace, days) VALUES ($1, $2)
     ON CONFLICT (workspace) DO UPDATE SET days = EXCLUDED.days, updated_at = now()`,
    [workspace, days],
  );
}
