import type { TypedSearchAttributes } from '@temporalio/common';
import { searchAttributes } from '../../workflows/definitions.js';
import type { ConversationScope } from '../domain/types.js';

/**
 * The search attributes a workflow starts with, so the Temporal UI lists it at once, with no upsert (it
 * keeps them current; the children count from its first decision on).
 */
export function startSearchAttributes(scope: ConversationScope): ConstructorParameters<typeof TypedSearchAttributes>[0] {
  return [
    { key: searchAttributes.workspace, value: scope.workspace },
    { key: searchAttributes.provider, value: scope.provider },
    { key: searchAttributes.state, value: 'collecting' },
    { key: searchAttributes.needsReview, value: false },
  ];
}
