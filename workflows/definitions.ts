import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { textProblem } from '../src/domain/storable-text.js';
import type { MessageWorkflowStatus } from '../src/domain/album-view.js';
import type { AlbumView, ReviewResolution } from '../src/domain/types.js';
import type { ChildrenBatch } from './types.js';

/** Every pending child of one album (or the one standalone message), sent with signal-with-start. */
export const childrenSignal = defineSignal<[ChildrenBatch]>('children');

/** The album status body (docs/api.md, "Status"), answered from workflow state. */
export const statusQuery = defineQuery<AlbumView>('status');

/** The `status` query of a `message:` workflow (same name as the album's, its own body). */
export const messageStatusQuery = defineQuery<MessageWorkflowStatus>('status');

/** The attachments an operator's retry set back to pending. */
export interface RetriedDownloads {
  attachments: Array<{ messageId: string; position: number }>;
}

/** Operator action: try every failed or expired attachment again. Refused once the album closed. */
export const retryDownloadsUpdate = defineUpdate<RetriedDownloads, []>('retry-downloads');

/** Operator action: take the album out of the review queue, with a note. */
export const resolveReviewUpdate = defineUpdate<ReviewResolution, [{ note: string }]>('resolve-review');

/** The longest note of resolve-review, in characters (code points, as JSON Schema's `maxLength` counts them). */
export const maxNoteLength = 2000;

/** Why resolve-review must refuse this note (it is stored with the album), or null when it may take it. */
export function noteProblem(note: unknown): string | null {
  if (typeof note !== 'string') return 'note must be a string';
  if (Array.from(note).length > maxNoteLength) return `note must be at most ${maxNoteLength} characters`;
  const problem = textProblem(note, 'prose');
  if (problem !== null) return `note must not contain ${problem}`;
  return null;
}

export const searchAttributes = {
  workspace: defineSearchAttributeKey('AlbumWorkspace', 'KEYWORD'),
  provider: defineSearchAttributeKey('AlbumProvider', 'KEYWORD'),
  state: defineSearchAttributeKey('AlbumState', 'KEYWORD'),
  needsReview: defineSearchAttributeKey('AlbumNeedsReview', 'BOOL'),
  children: defineSearchAttributeKey('AlbumChildren', 'INT'),
} as const;

/** Workflow type names, for code that starts workflows without importing workflow code. */
export const workflowTypes = {
  album: 'albumWorkflow',
  message: 'messageWorkflow',
  retention: 'retentionWorkflow',
  erasure: 'erasureWorkflow',
} as const;
