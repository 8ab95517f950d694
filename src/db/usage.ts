import type { Queryable } from './pool.js';

/** The tables whose rows are counted per workspace. */
export const usageTables = ['albums', 'messages', 'attachments', 'events', 'notifications', 'quarantine'] as const;
export type UsageTable = (typeof usageTables)[number];

/** What one workspace keeps: its rows, table by table, and the media objects its downloaded attachments refer to. */
export interface WorkspaceUsage {
  workspace: string;
  rows: Record<UsageTable, number>;
  media: {
    /** Distinct downloaded files (by SHA-256): a file several of the workspace's attachments share counts once. */
    objects: number;
    /** Their bytes, each file once. */
    bytes: number;
  };
}

/**
 * Every workspace that has a row in one of the counted tables, in order, with its figures; a workspace
 * with none is not listed. One statement, one pass over each table (the attachments are read once, for
 * their count and their media, through their message's workspace; the few with a live photo's still
 * once more, through its index). A notification is counted under the
 * workspace its workflow id names (`album:<ws>:…` or `message:<ws>:…`, the workspace URL-encoded):
 * PostgreSQL groups by the encoded part, which is decoded here.
 */
export async function workspaceUsage(db: Queryable): Promise<WorkspaceUsage[]> {
  const { rows } = await db.query<{ kind: UsageTable | 'media'; workspace: string; n: string; bytes: string | null }>(
    `WITH per_object AS (
       -- One row per (workspace, downloaded file), and one per workspace for its attachments with no downloaded file.
       SELECT m.workspace,
              CASE WHEN a.status = 'downloaded' THEN a.sha256 END AS sha256,
              count(*) AS attachments,
              max(a.bytes) FILTER (WHERE a.status = 'downloaded') AS bytes
         FROM attachments a JOIN messages m ON m.id = a.message_pk
        GROUP BY 1, 2
     ), objects AS (
       -- Each distinct file once per workspace: the attachments' files and the live photos' stills.
       SELECT workspace, sha256, max(bytes) AS bytes FROM (
         SELECT workspace, sha256, bytes FROM per_object WHERE sha256 IS NOT NULL
          UNION ALL
         SELECT m.workspace, a.still_sha256, a.still_bytes
           FROM attachments a JOIN messages m ON m.id = a.message_pk
          WHERE a.still_sha256 IS NOT NULL
       ) AS files
        GROUP BY 1, 2
     )
     SELECT 'albums' AS kind, workspace, count(*) AS n, NULL::numeric AS bytes FROM albums GROUP BY workspace
     UNION ALL
     SELECT 'messages', workspace, count(*), NULL FROM messages GROUP BY workspace
     UNION ALL
     SELECT 'events', workspace, count(*), NULL FROM events GROUP BY workspace
     UNION ALL
     SELECT 'quarantine', workspace, count(*), NULL FROM quarantine GROUP BY workspace
     UNION ALL
     SELECT 'notifications', split_part(workflow_id, ':', 2), count(*), NULL FROM notifications GROUP BY 2
     UNION ALL
     SELECT 'attachments', workspace, sum(attachments), NULL FROM per_object GROUP BY workspace
     UNION ALL
     SELECT 'media', workspace, count(*), coalesce(sum(bytes), 0) FROM objects GROUP BY workspace`,
  );
  const usage = new Map<string, WorkspaceUsage>();
  for (const row of rows) {
    const workspace = row.kind === 'notifications' ? decodedPart(row.workspace) : row.workspace;
    if (workspace === null) continue;
    let entry = usage.get(workspace);
    if (!entry) usage.set(workspace, (entry = emptyUsage(workspace)));
    if (row.kind === 'media') entry.media = { objects: Number(row.n), bytes: Number(row.bytes ?? 0) };
    else entry.rows[row.kind] += Number(row.n);
  }
  return [...usage.values()].sort((a, b) => (a.workspace < b.workspace ? -1 : a.workspace > b.workspace ? 1 : 0));
}

/** A workspace that keeps nothing. */
export function emptyUsage(workspace: string): WorkspaceUsage {
  return {
    workspace,
    rows: Object.fromEntries(usageTables.map((table) => [table, 0])) as Record<UsageTable, number>,
    media: { objects: 0, bytes: 0 },
  };
}

/** A URL-encoded part of a workflow id; null for one that is empty or not valid percent-encoding. */
function decodedPart(part: string): string | null {
  if (part === '') return null;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

export interface UsageSnapshot {
  usage: readonly WorkspaceUsage[];
  /** When it was read. */
  at: Date;
}

/** workspaceUsage, read at most once per `maxAgeMs`: callers within that age share one reading (and one query in flight). */
export interface UsageReader {
  read(): Promise<UsageSnapshot>;
}

export function cachedWorkspaceUsage(db: Queryable, maxAgeMs: number): UsageReader {
  let last: UsageSnapshot | undefined;
  let pending: Promise<UsageSnapshot> | undefined;
  return {
    read() {
      if (last && Date.now() - last.at.getTime() < maxAgeMs) return Promise.resolve(last);
      pending ??= workspaceUsage(db)
        .then((usage) => (last = { usage, at: new Date() }))
        .finally(() => {
          pending = undefined;
        });
      return pending;
    },
  };
}
