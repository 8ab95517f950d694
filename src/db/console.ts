import type { AlbumPhase } from '../domain/types.js';
import type { Pool } from './pool.js';

/** What the platform said about one attachment (attacker-controlled: shown escaped, never trusted). */
export interface AttachmentDetails {
  messageId: string;
  position: number;
  /** `image`, `video`, … as the event declared it. */
  kind: string | null;
  fileName: string | null;
  declaredMimeType: string | null;
  /** A live photo's still, once downloaded: the attachment's thumbnail. */
  stillSha256: string | null;
}

export async function attachmentDetails(pool: Pool, albumPk: string): Promise<AttachmentDetails[]> {
  const { rows } = await pool.query<{
    message_id: string;
    position: number;
    kind: string | null;
    file_name: string | null;
    mime_type: string | null;
    still_sha256: string | null;
  }>(
    `SELECT m.message_id, a.position, a.kind, a.file_name, a.mime_type, a.still_sha256
       FROM attachments a JOIN messages m ON m.id = a.message_pk
      WHERE m.album_pk = $1`,
    [albumPk],
  );
  return rows.map((row) => ({
    messageId: row.message_id,
    position: row.position,
    kind: row.kind,
    fileName: row.file_name,
    declaredMimeType: row.mime_type,
    stillSha256: row.still_sha256,
  }));
}

export interface AlbumVersion {
  state: AlbumPhase;
  /** Changes whenever anything the album page shows changes: a child, an attachment, a decision, the state, the review or its resolution. */
  version: string;
}

/** One cheap read that tells an open album page whether to fetch itself again. */
export async function albumVersion(pool: Pool, workflowId: string): Promise<AlbumVersion | null> {
  const { rows } = await pool.query<AlbumVersion>(
    `SELECT a.state,
            md5(concat_ws('|', a.state, a.updated_at, a.review_reasons::text, a.review_resolved_at,
                (SELECT concat_ws('|', count(*), max(m.last_received_at)) FROM messages m WHERE m.album_pk = a.id),
                (SELECT max(t.updated_at) FROM attachments t JOIN messages m ON m.id = t.message_pk WHERE m.album_pk = a.id),
                (SELECT max(d.seq) FROM decisions d WHERE d.workflow_id = a.workflow_id))) AS version
       FROM albums a
      WHERE a.workflow_id = $1`,
    [workflowId],
  );
  return rows[0] ?? null;
}

/** Every workspace that has an album, in order (one index probe per workspace, not a scan of the albums). */
export async function albumWorkspaces(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ workspace: string }>(
    `WITH RECURSIVE w (workspace) AS (
       (SELECT workspace FROM albums ORDER BY workspace LIMIT 1)
       UNION ALL
       SELECT (SELECT a.workspace FROM albums a WHERE a.workspace > w.workspace ORDER BY a.workspace LIMIT 1)
         FROM w WHERE w.workspace IS NOT NULL
     )
     SELECT workspace FROM w WHERE workspace IS NOT NULL`,
  );
  return rows.map((row) => row.workspace);
}
