import { albumWorkflowId, messageWorkflowId } from '../domain/keys.js';
import { workflowTypes } from '../../workflows/definitions.js';
import type { AlbumTimings, ChildArrival, ConversationScope } from '../domain/types.js';
import type { AlbumWorkflowInput, MessageWorkflowInput } from '../../workflows/types.js';
import type { QueuedChild } from '../db/children.js';
import type { OutboxRow } from '../db/outbox.js';
import { albumProfileOf } from '../ingest/sources.js';

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
}

/**
 * Groups claimed outbox rows by workflow (album children → `album:` workflow, standalone → `message:`),
 * one child per message however many rows it has, in order of each workflow's oldest row.
 */
export interface SignalPlan {
  timings: AlbumTimings;
  maxChildren: number;
  maxBytes: number;
}

export const defaultSignalPlan: Omit<SignalPlan, 'timings'> = {
  maxChildren: maxChildrenPerSignal,
  maxBytes: maxSignalBytes,
};

export function planSignals(rows: OutboxRow[], children: QueuedChild[], plan: SignalPlan): SignalBatch[] {
  const childByPk = new Map(children.map((child) => [child.messagePk, child]));
  const groups = new Map<
    string,
    { target: SignalTarget; albumPk: string | null; scope: ConversationScope; members: Map<string, string[]> }
  >();
  for (const row of rows) {
    const child = childByPk.get(row.messagePk);
    if (!child) throw new Error(`outbox row ${row.id} refers to message ${row.messagePk}, which was not loaded`);
    const target = targetOf(child, plan);
    let group = groups.get(target.workflowId);
    if (!group) {
      group = { target, albumPk: child.albumPk, scope: scopeOf(child), members: new Map() };
      groups.set(target.workflowId, group);
    }
    const outboxIds = group.members.get(child.messagePk) ?? [];
    outboxIds.push(row.id);
    group.members.set(child.messagePk, outboxIds);
  }

  const batches: SignalBatch[] = [];
  for (const { target, albumPk, scope, members } of groups.values()) {
    let batch: SignalBatch | undefined;
    let bytes = 0;
    for (const [messagePk, outboxIds] of members) {
      const arrival = childByPk.get(messagePk)!.arrival;
      const size = JSON.stringify(arrival).length;
      if (!batch || batch.children.length === plan.maxChildren || bytes + size > plan.maxBytes) {
        batch = { target, albumPk, scope, children: [], outboxIds: [] };
        batches.push(batch);
        bytes = 0;
      }
      batch.children.push(arrival);
      batch.outboxIds.push(...outboxIds);
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
