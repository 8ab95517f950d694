import { albumWorkflowId, messageWorkflowId } from '../domain/keys.js';
import { workflowTypes } from '../../workflows/definitions.js';
import type { AlbumTimings, ChildArrival, ConversationScope } from '../domain/types.js';
import type { AlbumWorkflowInput, MessageWorkflowInput } from '../../workflows/types.js';
import type { QueuedChild } from '../db/children.js';
import type { OutboxRow } from '../db/outbox.js';
import { albumProfileOf } from '../platforms/index.js';

/** Bound the payload of one signal (Temporal refuses payloads over 2 MiB); an album with more pending children gets several signals. */
export const maxChildrenPerSignal = 200;
export const maxSignalBytes = 512 * 1024;

export type SignalTarget =
  | { workflowType: typeof workflowTypes.album; workflowId: string; input: AlbumWorkflowInput }
  | { workflowType: typeof workflowTypes.message; workflowId: string; input: MessageWorkflowInput };

/** One signalWithStart: distinct children of one workflow, and every outbox row it settles. */
export interface SignalBatch {
  target: SignalTarget;
  /** The album's row, null for a standalone message. */
  albumPk: string | null;
  scope: ConversationScope;
  children: ChildArrival[];
  outboxIds: string[];
  /** The traceparents of the requests that queued these children (the traced ones): the signal's span links to them. */
  traceparents: string[];
}

/** What one pass plans its signals with: the workflows' timings and the bounds of one signal. */
export interface SignalPlan {
  timings: AlbumTimings;
  maxChildren: number;
  maxBytes: number;
}

export const defaultSignalPlan: Omit<SignalPlan, 'timings'> = {
  maxChildren: maxChildrenPerSignal,
  maxBytes: maxSignalBytes,
};

/** The outbox rows of one workflow, in the order they came. */
export interface WorkflowRows {
  target: SignalTarget;
  /** The album's row, null for a standalone message. */
  albumPk: string | null;
  rows: OutboxRow[];
}

/**
 * Groups outbox rows by the workflow they signal (album children → `album:` workflow, standalone →
 * `message:`), in order of each workflow's first row.
 */
export function rowsByWorkflow(rows: OutboxRow[], children: QueuedChild[], plan: SignalPlan): WorkflowRows[] {
  const childByPk = new Map(children.map((child) => [child.messagePk, child]));
  const groups = new Map<string, WorkflowRows>();
  for (const row of rows) {
    const child = childByPk.get(row.messagePk);
    if (!child) throw new Error(`outbox row ${row.id} refers to message ${row.messagePk}, which was not loaded`);
    const target = targetOf(child, plan);
    let group = groups.get(target.workflowId);
    if (!group) {
      group = { target, albumPk: child.albumPk, rows: [] };
      groups.set(target.workflowId, group);
    }
    group.rows.push(row);
  }
  return [...groups.values()];
}

/**
 * The signals that carry these rows: per workflow, one child per message however many rows it has, in
 * as few signals as the plan's bounds allow, in order of each workflow's first row.
 */
export function planSignals(rows: OutboxRow[], children: QueuedChild[], plan: SignalPlan): SignalBatch[] {
  const childByPk = new Map(children.map((child) => [child.messagePk, child]));
  const batches: SignalBatch[] = [];
  for (const { target, albumPk, rows: own } of rowsByWorkflow(rows, children, plan)) {
    const members = new Map<string, OutboxRow[]>();
    for (const row of own) members.set(row.messagePk, [...(members.get(row.messagePk) ?? []), row]);
    const scope = scopeOf(childByPk.get(own[0]!.messagePk)!);
    let batch: SignalBatch | undefined;
    let bytes = 0;
    for (const [messagePk, childRows] of members) {
      const arrival = childByPk.get(messagePk)!.arrival;
      const size = JSON.stringify(arrival).length;
      if (!batch || batch.children.length === plan.maxChildren || bytes + size > plan.maxBytes) {
        batch = { target, albumPk, scope, children: [], outboxIds: [], traceparents: [] };
        batches.push(batch);
        bytes = 0;
      }
      batch.children.push(arrival);
      for (const row of childRows) {
        batch.outboxIds.push(row.id);
        if (row.traceparent !== null) batch.traceparents.push(row.traceparent);
      }
      bytes += size;
    }
  }
  return batches;
}

function scopeOf({ key }: QueuedChild): ConversationScope {
  return { workspace: key.workspace, provider: key.provider, accountId: key.accountId, conversationId: key.conversationId };
}

function targetOf(child: QueuedChild, { timings }: SignalPlan): SignalTarget {
  if (child.albumId === null) {
    return { workflowType: workflowTypes.message, workflowId: messageWorkflowId(child.key), input: { key: child.key, timings } };
  }
  const key = { ...scopeOf(child), albumId: child.albumId };
  // The album's id and source come from its row: both are set, or neither.
  const profile = albumProfileOf(child.albumSource!);
  return { workflowType: workflowTypes.album, workflowId: albumWorkflowId(key), input: { key, timings, profile } };
}
