import type { ReviewResolution } from '../domain/types.js';
import type { Pool } from './pool.js';

/** What an operator may ask of an album (docs/api.md, "Operator actions"). */
export type OperatorAction = 'retry-downloads' | 'resolve-review';

/** Keeps what an operator asked of an album, after its workflow carried it out. */
export async function recordOperatorAction(
  pool: Pool,
  action: { workflowId: string; action: OperatorAction; detail: object; requestedBy: string | null },
): Promise<void> {
  await pool.query(`INSERT INTO operator_actions (workflow_id, action, detail, requested_by) VALUES ($1, $2, $3, $4)`, [
    action.workflowId,
    action.action,
    JSON.stringify(action.detail),
    action.requestedBy,
  ]);
}

/** The album leaves the review queue (its workflow resolved it; its next record keeps it so). */
export async function recordReviewResolution(pool: Pool, workflowId: string, resolution: ReviewResolution): Promise<void> {
  await pool.query(`UPDATE albums SET review_resolved_at = $2, review_note = $3, updated_at = now() WHERE workflow_id = $1`, [
    workflowId,
    resolution.at,
    resolution.note,
  ]);
}
