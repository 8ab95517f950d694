// What the retention and erasure workflows ask of their activities (activities/lifetime.ts).
import type { ErasureSubject, PurgeCounts } from '../src/domain/lifetime.js';

/** An album that stays, less the children an erasure removed. */
export interface AmendedAlbum {
  workflowId: string;
  messageIds: string[];
}

/** Rows (or media objects) per batch: one transaction each, short enough never to hold locks for long. */
export const purgeBatch = 200;

export interface ErasureWorkflowInput {
  erasureId: string;
  subject: ErasureSubject;
}

/** One batch's outcome: what it removed, and whether another batch has work. */
export interface PurgeStep {
  counts: Partial<PurgeCounts>;
  more: boolean;
}

export interface ErasureStep extends PurgeStep {
  /** The workflows of what this batch removed (deleted from Temporal already). */
  workflowIds: string[];
  /** Albums that stay, less erased children (their workflows deleted already, to be run again: resumeAlbums). */
  amended?: AmendedAlbum[];
}

export interface LifetimeActivities {
  /** One bounded batch of retention: expired albums and standalone messages, aged events and quarantine, expired tombstones. */
  purgeExpired: (input: { limit: number }) => Promise<PurgeStep>;
  /** One bounded batch of the media collector: objects no kept attachment references leave the store. */
  collectMedia: (input: { limit: number }) => Promise<PurgeStep>;
  /** One bounded batch of an erasure: the workflows of its next albums and messages are deleted, then their rows (tombstoned). */
  eraseStep: (input: { erasureId: string; subject: ErasureSubject; limit: number }) => Promise<ErasureStep>;
  /** Deletes these workflows again (a run started meanwhile) and the rows they wrote after their albums went. */
  forgetWorkflows: (input: { workflowIds: string[] }) => Promise<Partial<PurgeCounts>>;
  /**
   * Albums that stay, less erased children: each workflow deleted again (a run started meanwhile may hold
   * what went), the children taken out again of what it recorded, and the album run again from what is
   * stored, as it was (collecting, decided, or in its late window); a closed album is not run again.
   */
  resumeAlbums: (input: { albums: AmendedAlbum[] }) => Promise<Partial<PurgeCounts>>;
  /** One bounded batch of what a workspace's erasure removes after its albums and messages: every other row of the workspace. */
  eraseWorkspaceRemainder: (input: { workspace: string; limit: number }) => Promise<PurgeStep>;
  /** Records the erasure's counts so far, and, when `done`, that it finished. */
  recordErasure: (input: { erasureId: string; counts: PurgeCounts; done: boolean }) => Promise<void>;
}
