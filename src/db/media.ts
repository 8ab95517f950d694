import type { Pool } from './pool.js';

export interface WorkspaceMedia {
  /** As the file's server sent it; null when it sent none. */
  contentType: string | null;
}

/**
 * A downloaded file as one of `workspace`'s attachments stored it (its file, or a live photo's still), or
 * null when no attachment of that workspace has this hash (a file of another workspace is not found here).
 */
export async function findWorkspaceMedia(pool: Pool, workspace: string, sha256: string): Promise<WorkspaceMedia | null> {
  const { rows } = await pool.query<{ content_type: string | null }>(
    `SELECT content_type FROM (
       SELECT a.content_type
         FROM attachments a JOIN messages m ON m.id = a.message_pk
        WHERE a.sha256 = $2 AND a.status = 'downloaded' AND m.workspace = $1
        UNION ALL
       SELECT a.still_content_type
         FROM attachments a JOIN messages m ON m.id = a.message_pk
        WHERE a.still_sha256 = $2 AND m.workspace = $1
     ) AS stored
      ORDER BY content_type NULLS LAST
      LIMIT 1`,
    [workspace, sha256],
  );
  const row = rows[0];
  return row ? { contentType: row.content_type } : null;
}
