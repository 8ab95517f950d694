// Data lifetime's shared shapes (pure, so that workflows use them too): what an erasure names, and what
// a purge (retention or an erasure) removed, counted.
import type { AlbumKey, ConversationScope, MessageKey } from './types.js';

/** What an erasure names: one album, one message, everything of one conversation, or everything of one workspace. */
export type ErasureSubject =
  | { scope: 'album'; key: AlbumKey }
  | { scope: 'message'; key: MessageKey }
  | { scope: 'conversation'; key: ConversationScope }
  | { scope: 'workspace'; key: { workspace: string } };

export interface PurgeCounts {
  albums: number;
  messages: number;
  attachments: number;
  events: number;
  decisions: number;
  notifications: number;
  quarantine: number;
  tombstones: number;
  /** Workflow executions deleted from Temporal (an erasure's). */
  workflows: number;
  /** A workspace's outbound endpoints (a workspace's erasure), with their deliveries. */
  endpoints: number;
  mediaObjects: number;
  mediaBytes: number;
  /** Media objects the store did not remove (it refused, or was down): set aside, tried again by retention. */
  mediaFailed: number;
}

export const noCounts = (): PurgeCounts => ({
  albums: 0,
  messages: 0,
  attachments: 0,
  events: 0,
  decisions: 0,
  notifications: 0,
  quarantine: 0,
  tombstones: 0,
  workflows: 0,
  endpoints: 0,
  mediaObjects: 0,
  mediaBytes: 0,
  mediaFailed: 0,
});

/** `into` with `more` added to it (returned, changed in place). */
export function addCounts(into: PurgeCounts, more: Partial<PurgeCounts>): PurgeCounts {
  for (const [name, value] of Object.entries(more) as Array<[keyof PurgeCounts, number | undefined]>) {
    if (value !== undefined && name in into) into[name] += value;
  }
  return into;
}

/** What each count counts, as people read it, in the order they are shown (mediaBytes goes with mediaObjects). */
export const purgeCountLabels: ReadonlyArray<readonly [Exclude<keyof PurgeCounts, 'mediaBytes'>, string]> = [
  ['albums', 'albums'],
  ['messages', 'messages'],
  ['attachments', 'attachments'],
  ['events', 'raw events'],
  ['decisions', 'decisions'],
  ['notifications', 'notifications'],
  ['quarantine', 'quarantined events'],
  ['tombstones', 'tombstones (a redelivery is not stored)'],
  ['workflows', 'workflows deleted from Temporal'],
  ['endpoints', 'endpoints (with their deliveries)'],
  ['mediaObjects', 'media files'],
  ['mediaFailed', 'media files the store did not delete (set aside, retried later)'],
];

/** The counts that are not zero, as a person reads them: `3 albums, 12 messages`. */
export function describeCounts(counts: PurgeCounts): string {
  const parts = purgeCountLabels.filter(([name]) => counts[name] > 0).map(([name, label]) => `${counts[name]} ${label}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing';
}
