// Which text PostgreSQL can store, and which text may be an identifier or an operator's note: the one check
// the ingress parsers, the HTTP schemas and the workflow's update validators share (pure, so workflow code
// may import it).

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

/**
 * What a text is: an `identifier` (an id, a name, a path segment, a search for an id) holds no control
 * character at all; `prose` (an operator's note) may hold tabs and line breaks.
 */
export type TextKind = 'identifier' | 'prose';

const controlCharacter: Record<TextKind, RegExp> = {
  // eslint-disable-next-line no-control-regex
  identifier: /[\u0000-\u001f\u007f-\u009f]/,
  // eslint-disable-next-line no-control-regex
  prose: /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/,
};

/** What a text of this kind must not contain, as the refusals name it. */
export const controlCharacterProblem: Record<TextKind, string> = {
  identifier: 'a control character',
  prose: 'a control character other than a tab or a line break',
};

/** Why a text of this kind is refused (`must not contain …`), or null when it is fine. */
export function textProblem(text: string, kind: TextKind): string | null {
  if (!isStorableText(text)) return unstorableTextProblem;
  if (controlCharacter[kind].test(text)) return controlCharacterProblem[kind];
  return null;
}
