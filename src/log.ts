import { pino, type Logger } from 'pino';

export type { Logger };

/** Header names whose values are never written to a log line. */
export const redactedHeaders = ['x-unifyport-signature', 'x-albumflow-signature', 'authorization', 'cookie'];

export function createLogger(level: string, name = 'albumflow'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: [
        ...redactedHeaders.map((h) => `req.headers["${h}"]`),
        ...redactedHeaders.map((h) => `headers["${h}"]`),
        '*.secret',
        '*.secrets',
        '*.apiKey',
      ],
      censor: '[redacted]',
    },
  });
}
