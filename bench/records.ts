// What the load generator's request records say about a phase: which children were accepted, under
// which album workflow, and which of them no recorded decision includes yet. Pure.
import type { RequestRecord } from '../test/harness/load.js';
import type { RecordedDecision } from '../test/harness/rows.js';

export function workflowIdOf(record: RequestRecord): string | null {
  return record.albumKey === null ? null : `album:${record.albumKey}`;
}

/** Accepted children by album workflow id. */
export function acceptedChildren(records: readonly RequestRecord[]): Map<string, Set<string>> {
  const byWorkflow = new Map<string, Set<string>>();
  for (const record of records) {
    const workflowId = workflowIdOf(record);
    if (!record.accepted || workflowId === null) continue;
    const children = byWorkflow.get(workflowId) ?? new Set<string>();
    children.add(record.messageId);
    byWorkflow.set(workflowId, children);
  }
  return byWorkflow;
}

export function childCount(byWorkflow: Map<string, Set<string>>): number {
  let count = 0;
  for (const children of byWorkflow.values()) count += children.size;
  return count;
}

/** New children accepted (redeliveries not counted). */
export function newChildren(records: readonly RequestRecord[]): number {
  return records.filter((r) => r.accepted && r.duplicate === false).length;
}

/** `<workflow id> <message id>` of the expected children that no decision includes. */
export function undecided(expected: Map<string, Set<string>>, decisions: Map<string, RecordedDecision[]>): string[] {
  const missing: string[] = [];
  for (const [workflowId, children] of expected) {
    const decided = new Set((decisions.get(workflowId) ?? []).flatMap((d) => d.child_message_ids));
    for (const child of children) if (!decided.has(child)) missing.push(`${workflowId} ${child}`);
  }
  return missing;
}

/** `<workflow id> <message id>` of the expected children missing from `stored`. */
export function notStored(expected: Map<string, Set<string>>, stored: Set<string>): string[] {
  const missing: string[] = [];
  for (const [workflowId, children] of expected) {
    for (const child of children) if (!stored.has(`${workflowId} ${child}`)) missing.push(`${workflowId} ${child}`);
  }
  return missing;
}
