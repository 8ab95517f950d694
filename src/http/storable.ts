// The HTTP side of the storable-text check (workflows/storable-text.ts): an Ajv keyword that the route
// schemas' strings carry, so that a NUL or an unpaired surrogate in any path segment, query parameter or
// body field is a 400 naming the field before a handler runs.

import { Type, type TStringOptions } from 'typebox';
import { isStorableText, unstorableTextProblem } from '../../workflows/storable-text.js';

/** The keyword's name; an `x-` name is a valid extension of the OpenAPI document the schemas also feed. */
export const storableTextKeyword = 'x-storable-text';

interface AjvInstance {
  addKeyword(definition: {
    keyword: string;
    type: 'string';
    schemaType: 'boolean';
    compile: (enabled: boolean) => (data: string) => boolean;
    error: { message: string };
  }): unknown;
}

/** Registers the keyword (an entry of Fastify's `ajv.plugins`). */
export function storableTextPlugin<T extends AjvInstance>(ajv: T): T {
  ajv.addKeyword({
    keyword: storableTextKeyword,
    type: 'string',
    schemaType: 'boolean',
    compile: (enabled) => (enabled ? isStorableText : () => true),
    error: { message: `must not contain ${unstorableTextProblem}` },
  });
  return ajv;
}

/** A string of a request that PostgreSQL must be able to store (or that becomes part of a stored id). */
export function StorableString(options: TStringOptions = {}) {
  return Type.String({ ...options, [storableTextKeyword]: true });
}
