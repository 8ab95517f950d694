// Which text PostgreSQL can store: the one check the ingress parsers, the HTTP schemas and the workflow's
// update validators share (pure, so workflow code may import it).

import type { JsonValue } from './types.js';

/** What makes a text unstorable, as the refusals name it. */
export const unstorableTextProblem = 'a NUL character or an unpaired surrogate';

// With the u flag a surrogate range matches only a surrogate that is not half of a pair.
// eslint-disable-next-line no-control-regex
const unstorableCharacter = /[\u0000\ud800-\udfff]/u;

/**
 * False for a text holding a NUL or an unpaired surrogate: JSON and JavaScript strings can carry both,
 * PostgreSQL's text and jsonb cannot (22021, 22P05), and encodeURIComponent throws on the second.
 */
export function isStorableText(text: string): boolean {
  return !unstorableCharacter.test(text);
}

/** A string or key anywhere in the value is not storable text. Walks without recursion (a 1 MiB body can nest deeply). */
export function holdsUnstorableText(value: JsonValue): boolean {
  const pending: JsonValue[] = [value];
  for (let current = pending.pop(); current !== undefined; current = pending.pop()) {
    if (typeof current === 'string') {
      if (!isStorableText(current)) return true;
    } else if (Array.isArray(current)) {
      for (const item of current) pending.push(item);
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, child] of Object.entries(current)) {
        if (!isStorableText(key)) return true;
        pending.push(child);
      }
    }
  }
  return false;
}
