import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Header names whose values are never written to a log line. */
export const redactedHeaders = ['x-unifyport-signature', 'x-albumflow-signature', 'x-telegram-bot-api-secret-token', 'authorization', 'cookie'];

export function createLogger(level: string, name = 'albumflow', destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      redact: {
        paths: [
          ...redactedHeaders.map((h) => `req.headers["${h}"]`),
          ...redactedHeaders.map((h) => `headers["${h}"]`),
          '*.secret',
          '*.secrets',
          '*.apiKey',
          // A TelegramBot of the configuration, logged whole or as `bot`.
          'token',
          '*.token',
          'secretToken',
          '*.secretToken',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
