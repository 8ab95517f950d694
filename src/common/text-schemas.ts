// The schema side of the text rules (src/domain/storable-text.ts): an Ajv keyword that the strings of the
// route schemas (and of the tenant bodies they take from src/tenants/schemas.ts) carry, so that a NUL, an
// unpaired surrogate or a control character where none belongs, in any path segment, query parameter or
// body field, is a 400 naming the field before a handler runs.

import { Type, type TStringOptions } from 'typebox';
import { textProblem, type TextKind } from '../domain/storable-text.js';

/** The keyword's name; an `x-` name is a valid extension of the OpenAPI document the schemas also feed. */
export const textKindKeyword = 'x-text';

interface KeywordError {
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

/** Ajv's function keyword: errors set on the function itself name what the text holds. */
type TextCheck = ((kind: unknown, data: unknown) => boolean) & { errors?: KeywordError[] };

interface AjvInstance {
  addKeyword(definition: { keyword: string; type: 'string'; schemaType: 'string'; validate: TextCheck; errors: true }): unknown;
}

const check: TextCheck = (kind, data) => {
  // The keyword is declared for strings (`type`) whose schema value is a string (`schemaType`).
  const problem = textProblem(data as string, kind as TextKind);
  if (problem === null) return true;
  check.errors = [{ keyword: textKindKeyword, message: `must not contain ${problem}`, params: { kind } }];
  return false;
};

/** Registers the keyword (an entry of Fastify's `ajv.plugins`). */
export function textKindPlugin<T extends AjvInstance>(ajv: T): T {
  ajv.addKeyword({ keyword: textKindKeyword, type: 'string', schemaType: 'string', validate: check, errors: true });
  return ajv;
}

/** A string that is or becomes part of an id (a key segment, a filter, a search): no control character. */
export function IdentifierString(options: TStringOptions = {}) {
  return Type.String({ ...options, [textKindKeyword]: 'identifier' satisfies TextKind });
}

/** A string a person wrote (an operator's note): tabs and line breaks, no other control character. */
export function ProseString(options: TStringOptions = {}) {
  return Type.String({ ...options, [textKindKeyword]: 'prose' satisfies TextKind });
}
