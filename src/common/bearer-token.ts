/** RFC 6750's b64token: what may follow `Bearer ` in an Authorization header, and so what API_TOKENS may hold. */
export const bearerTokenPattern = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The token of an `Authorization: Bearer <token>` header, or undefined when the header is anything else. */
export function bearerTokenOf(authorization: string): string | undefined {
  const token = /^Bearer +([^ ]+) *$/i.exec(authorization)?.[1];
  return token !== undefined && bearerTokenPattern.test(token) ? token : undefined;
}
