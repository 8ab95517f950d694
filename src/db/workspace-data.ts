import type { Queryable } from './pool.js';

/**
 * The tables whose rows are a workspace's data: what it received (messages, albums, raw events,
 * quarantined bodies), the notifications recorded for it, and the endpoints they go to. Every other row of
 * a workspace's data hangs off one of these: attachments, message history and the outbox off a message;
 * deliveries and feed entries off a notification; decisions and operator actions off an album's or a
 * message's workflow. What an erasure keeps is not data: its receipts (erasures), the identities of what it
 * erased (tombstones) and the counters that keep ids unique (feed_positions); nor is a setting
 * (workspace_retention).
 */
export const workspaceDataTables = ['messages', 'albums', 'events', 'quarantine', 'notifications', 'endpoints'] as const;
export type WorkspaceDataTable = (typeof workspaceDataTables)[number];

/** The tables that still hold a row of the workspace, in the order above; none once its data is erased. */
export async function workspaceDataLeft(db: Queryable, workspace: string): Promise<WorkspaceDataTable[]> {
  const { rows } = await db.query<{ tables: WorkspaceDataTable[] }>(
    `SELECT array_remove(ARRAY[${workspaceDataTables
      .map((table) => `CASE WHEN EXISTS (SELECT FROM ${table} WHERE workspace = $1) THEN '${table}' END`)
      .join(', ')}], NULL) AS tables`,
    [workspace],
  );
  return rows[0]!.tables;
}

/** The id of a running erasure of the whole workspace, whose last step removes every row of the name; null when none runs. */
export async function runningWorkspaceErasure(db: Queryable, workspace: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM erasures WHERE workspace = $1 AND scope = 'workspace' AND state = 'running' ORDER BY requested_at LIMIT 1`,
    [workspace],
  );
  return rows[0]?.id ?? null;
}
