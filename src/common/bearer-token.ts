/** RFC 6750's b64token: what may follow `Bearer ` in an Authorization header, and so what API_TOKENS may hold. */
export const bearerTokenPattern = /^[A-Za-z0-9\-._~+/]+=*$/;
