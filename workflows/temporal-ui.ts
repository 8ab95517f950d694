import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { searchAttributes } from './definitions.js';
import type { AlbumPhase } from '../src/domain/types.js';

/** What the Temporal UI shows of a workflow: its search attributes and its current details. */
export interface UiView {
  workspace: string;
  provider: string;
  state: AlbumPhase;
  needsReview: boolean;
  /** Shown as of the latest decision (or change of state or review). */
  children: number;
  /** Decisions taken: a new one refreshes the children shown. */
  decisions: number;
  details: string;
}

type Shown = Partial<Pick<UiView, 'workspace' | 'provider' | 'state' | 'needsReview' | 'children'>>;

/**
 * Keeps the search attributes and the current details current. An upsert is a billable action, so the
 * attributes change only with a decision, the state or the review flag, never with a child alone; the
 * current details (free) follow every change. It starts from the attributes the workflow has: those the
 * dispatcher started it with, or those a run continued as new kept.
 */
export class TemporalUi {
  private readonly shown: Shown;
  private decisions: number | undefined;
  private details: string | undefined;

  constructor() {
    const attributes = workflowInfo().typedSearchAttributes;
    this.shown = {
      workspace: attributes.get(searchAttributes.workspace),
      provider: attributes.get(searchAttributes.provider),
      state: attributes.get(searchAttributes.state) as AlbumPhase | undefined,
      needsReview: attributes.get(searchAttributes.needsReview),
      children: attributes.get(searchAttributes.children),
    };
  }

  show(next: UiView): void {
    const decided = this.decisions !== undefined && next.decisions !== this.decisions;
    this.decisions = next.decisions;
    if (decided || next.state !== this.shown.state || next.needsReview !== this.shown.needsReview) {
      const changes: SearchAttributeUpdatePair[] = [];
      if (next.workspace !== this.shown.workspace) changes.push({ key: searchAttributes.workspace, value: next.workspace });
      if (next.provider !== this.shown.provider) changes.push({ key: searchAttributes.provider, value: next.provider });
      if (next.state !== this.shown.state) changes.push({ key: searchAttributes.state, value: next.state });
      if (next.needsReview !== this.shown.needsReview) changes.push({ key: searchAttributes.needsReview, value: next.needsReview });
      if (next.children !== this.shown.children) changes.push({ key: searchAttributes.children, value: next.children });
      if (changes.length > 0) upsertSearchAttributes(changes);
      Object.assign(this.shown, {
        workspace: next.workspace,
        provider: next.provider,
        state: next.state,
        needsReview: next.needsReview,
        children: next.children,
      });
    }
    if (next.details !== this.details) setCurrentDetails(next.details);
    this.details = next.details;
  }
}
