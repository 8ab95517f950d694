// The state an album run hands to the run it continues as (continue-as-new), and reading it back. Pure.

import type { DecisionRulesState } from './album-rules.js';
import type { JsonValue } from '../src/domain/types.js';

/** What an album run hands to the run it continues as. */
interface AlbumCarried {
  version: 1;
  rules: DecisionRulesState;
}

/** The state of the album rules as the next run's input carries it. */
export function carriedState(rules: DecisionRulesState): JsonValue {
  const carried: AlbumCarried = { version: 1, rules };
  return carried as unknown as JsonValue;
}

/** The state of the album rules a run continued as new starts from. */
export function carriedRules(carried: JsonValue): DecisionRulesState {
  const value = carried as unknown as Partial<AlbumCarried>;
  if (value.version !== 1 || !value.rules) throw new Error('albumWorkflow: carried state of an unknown version');
  return value.rules;
}
