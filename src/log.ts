import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Header names whose values are never written to a log line. */
export const redactedHeaders = ['x-unifyport-signature', 'x-albumflow-signature', 'x-telegram-bot-api-secret-token', 'authorization', 'cookie'];

/** `json`: one JSON object a line (for log collectors); `pretty`: readable lines for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  format: LogFormat;
  name?: string;
  /** Where JSON lines go instead of standard output (tests read them). */
  destination?: DestinationStream;
}

/** What a person at a terminal reads: time, level and message, the fields after them; colours on a TTY. */
function prettyStream(): DestinationStream {
  return pretty({ colorize: process.stdout.isTTY, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,name,detail', singleLine: true });
}

export function createLogger({ level, format, name = 'albumflow', destination }: LoggerOptions): Logger {
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
    destination ?? (format === 'pretty' ? prettyStream() : undefined),
  );
}
