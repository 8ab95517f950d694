/**
 * What a failure says where a person reads it (a stored error, a log line): its message, and its cause's
 * when it has one (`fetch failed: connect ECONNREFUSED …`).
 */
export function errorMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
}
