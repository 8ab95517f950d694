// What a workspace's erasure removes once its albums and messages are gone (purge.ts, batch by batch):
// every other row that carries the workspace's name, so that the name is free for a new customer. The
// receipts (erasures) and the admin audit stay; the workspace's own row, its signing secrets, bots and
// channels go with its removal (src/tenants/service.ts), before the erasure starts.
import type { PurgeCounts } from '../domain/lifetime.js';
import type { Pool } from './pool.js';
import { withTransaction } from './transaction.js';

/** One batch of the remainder: what it removed, and whether another batch has work. */
export interface RemainderBatch {
  counts: Pick<PurgeCounts, 'events' | 'quarantine' | 'notifications' | 'endpoints'>;
  more: boolean;
}

/**
 * Removes up to `limit` each of the workspace's raw events (of every type), quarantined bodies, tombstones
 * and notifications (their deliveries, attempts and feed entries with them); once none of those is left,
 * its endpoints (their secrets and deliveries with them), its feed's position counter and its retention
 * setting. In one transaction, so a crash rolls the batch back whole and running it again finds what is left.
 */
export async function purgeWorkspaceRemainder(pool: Pool, workspace: string, limit: number): Promise<RemainderBatch> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ events: number; quarantine: number; tombstones: number; notifications: number }>(
      `WITH events_gone AS (
         DELETE FROM events WHERE id IN (SELECT id FROM events WHERE workspace = $1 LIMIT $2) RETURNING 1
       ), quarantine_gone AS (
         DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine WHERE workspace = $1 LIMIT $2) RETURNING 1
       ), tombstones_gone AS (
         DELETE FROM tombstones WHERE identity IN (SELECT identity FROM tombstones WHERE workspace = $1 LIMIT $2) RETURNING 1
       ), notifications_gone AS (
         DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE workspace = $1 LIMIT $2) RETURNING 1
       )
       SELECT (SELECT count(*)::int FROM events_gone) AS events,
              (SELECT count(*)::int FROM quarantine_gone) AS quarantine,
              (SELECT count(*)::int FROM tombstones_gone) AS tombstones,
              (SELECT count(*)::int FROM notifications_gone) AS notifications`,
      [workspace, limit],
    );
    const { tombstones, ...counts } = rows[0]!;
    if ([counts.events, counts.quarantine, tombstones, counts.notifications].some((n) => n === limit)) {
      return { counts: { ...counts, endpoints: 0 }, more: true };
    }
    const endpoints = await client.query(`DELETE FROM endpoints WHERE workspace = $1`, [workspace]);
    await client.query(`DELETE FROM feed WHERE workspace = $1`, [workspace]);
    await client.query(`DELETE FROM feed_positions WHERE workspace = $1`, [workspace]);
    await client.query(`DELETE FROM workspace_retention WHERE workspace = $1`, [workspace]);
    return { counts: { ...counts, endpoints: endpoints.rowCount ?? 0 }, more: false };
  });
}
