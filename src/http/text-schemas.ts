// The HTTP side of the text rules (workflows/storable-text.ts): an Ajv keyword that the route schemas'
// strings carry, so that a NUL, an unpaired surrogate or a control character where none belongs, in any
// path segment, query parameter or body field, is a 400 naming the field before a handler runs.

import { Type, type TStringOptions } from 'typebox';
import { textProblem, type TextKind } from '../../workflows/storable-text.js';

/** The keyword's name; an `x-` name is a valid extension of the OpenAPI document the schemas also feed. */
export const textKindKeyword = 'x-text';

interface AjvInstance {
  addKeyword(definition: {
    keyword: string;
    type: 'string';
    schemaType: 'string';
    compile: (kind: TextKind) => (data: string) => boolean;
    error: { message: (context: { schema: TextKind }) => string };
  }): unknown;
}

const refusal: Record<TextKind, string> = {
  identifier: 'must not contain a NUL character, an unpaired surrogate or a control character',
  prose: 'must not contain a NUL character, an unpaired surrogate or a control character other than a tab or a line break',
};

/** Registers the keyword (an entry of Fastify's `ajv.plugins`). */
export function textKindPlugin<T extends AjvInstance>(ajv: T): T {
  ajv.addKeyword({
    keyword: textKindKeyword,
    type: 'string',
    schemaType: 'string',
    compile: (kind) => (data) => textProblem(data, kind) === null,
    error: { message: ({ schema }) => refusal[schema] },
  });
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
