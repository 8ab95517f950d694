// The error every HTTP answer of albumflow refuses with, whichever part of the app answers: its body's
// schema and the error a route throws to send it.

import { Type, type Static } from 'typebox';

export const ErrorBodySchema = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'Why the request was refused' },
);
export type ErrorBody = Static<typeof ErrorBodySchema>;

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/** An error whose status, code and message are meant for the client. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}
