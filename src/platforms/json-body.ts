// Reading a verified webhook body as JSON, shared by the UnifyPort and the Telegram parsers: the same
// limits and the same wording for the same problem, whichever contract the body follows.

import { maxInt32 } from '../domain/child.js';
import type { JsonObject, JsonValue } from '../domain/types.js';

/** Far deeper than any real event, and well within what PostgreSQL's jsonb accepts (deeper raises 54001, not a data error). */
export const maxNestingDepth = 64;

export type JsonBody =
  | { ok: true; value: JsonObject }
  /** `invalid_json`: not JSON at all; `invalid_shape`: JSON, but not an object or nested too deep. */
  | { ok: false; problem: 'invalid_json' | 'invalid_shape'; message: string };

/** Parses a body that must be one JSON object; `noun` names it in the messages ("the event must be …"). */
export function parseJsonObject(body: Buffer, noun: string): JsonBody {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { ok: false, problem: 'invalid_json', message: `body is not valid JSON: ${escapeControlCharacters((err as Error).message)}` };
  }
  if (!isObject(value)) return { ok: false, problem: 'invalid_shape', message: `the ${noun} must be a JSON object` };
  if (nestsDeeperThan(value, maxNestingDepth)) {
    return { ok: false, problem: 'invalid_shape', message: `the ${noun} nests deeper than ${maxNestingDepth} levels` };
  }
  return { ok: true, value };
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function nonEmptyString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function firstNonEmptyString(...candidates: unknown[]): string | null {
  for (const candidate of candidates) {
    const text = nonEmptyString(candidate);
    if (text !== null) return text;
  }
  return null;
}

/** A byte count or similar: a safe integer ≥ 0, else null. */
export function nonNegativeSafeInteger(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** A count stored as `integer` (pixels): an integer from 0 to 2^31 - 1, else null. */
export function nonNegativeInt32(value: unknown): number | null {
  const integer = nonNegativeSafeInteger(value);
  return integer !== null && integer <= maxInt32 ? integer : null;
}

/** Walks the value without recursion (a 1 MiB body can nest half a million levels). */
function nestsDeeperThan(value: JsonValue, limit: number): boolean {
  const pending: Array<[JsonValue, number]> = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [current, depth] = next;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}

/** JSON.parse quotes the offending bytes in its message; a NUL there could not be stored with the quarantined body. */
function escapeControlCharacters(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
