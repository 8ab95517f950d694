import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { searchAttributes } from './definitions.js';
import type { AlbumState } from './types.js';

/** What the Temporal UI shows of a workflow: its search attributes and its current details. */
export interface UiView {
  workspace: string;
  provider: string;
  state: AlbumState;
  needsReview: boolean;
  children: number;
  details: string;
}

/** Keeps the search attributes (upserted only when a value changed) and the current details current. */
export class TemporalUi {
  private shown: Partial<UiView> = {};

  show(next: UiView): void {
    const changes: SearchAttributeUpdatePair[] = [];
    if (next.workspace !== this.shown.workspace) changes.push({ key: searchAttributes.workspace, value: next.workspace });
    if (next.provider !== this.shown.provider) changes.push({ key: searchAttributes.provider, value: next.provider });
    if (next.state !== this.shown.state) changes.push({ key: searchAttributes.state, value: next.state });
    if (next.needsReview !== this.shown.needsReview) changes.push({ key: searchAttributes.needsReview, value: next.needsReview });
    if (next.children !== this.shown.children) changes.push({ key: searchAttributes.children, value: next.children });
    if (changes.length > 0) upsertSearchAttributes(changes);
    if (next.details !== this.shown.details) setCurrentDetails(next.details);
    this.shown = next;
  }
}
