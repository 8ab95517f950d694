import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { AlbumStatus, ChildrenBatch } from './types.js';

/** Every pending child of one album (or the one standalone message), sent with signal-with-start. */
export const childrenSignal = defineSignal<[ChildrenBatch]>('children');

/** The album status body of DESIGN.md §3, answered from workflow state. */
export const statusQuery = defineQuery<AlbumStatus>('status');

export const searchAttributes = {
  workspace: defineSearchAttributeKey('AlbumWorkspace', 'KEYWORD'),
  provider: defineSearchAttributeKey('AlbumProvider', 'KEYWORD'),
  state: defineSearchAttributeKey('AlbumState', 'KEYWORD'),
  needsReview: defineSearchAttributeKey('AlbumNeedsReview', 'BOOL'),
  children: defineSearchAttributeKey('AlbumChildren', 'INT'),
} as const;

/** Workflow type names, for code that starts workflows without importing workflow code. */
export const workflowTypes = { album: 'albumWorkflow', message: 'messageWorkflow' } as const;
