import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** Header names whose values are never written to a log line (requests log no headers at all). */
const redactedHeaders = [
  'x-unifyport-signature',
  'x-albumflow-signature',
  'x-telegram-bot-api-secret-token',
  'authorization',
  'cookie',
  'set-cookie',
];

/** Query parameters whose values are never written to a log line (the sign-in link's code, a media link's signature). */
const redactedQueryParameters = new Set(['code', 'token', 'access_token', 'sig']);

function redactUrl(url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const parameters = new URLSearchParams(url.slice(query + 1));
  let redacted = false;
  for (const name of new Set(parameters.keys())) {
    if (!redactedQueryParameters.has(name.toLowerCase())) continue;
    parameters.set(name, '[redacted]');
    redacted = true;
  }
  return redacted ? `${url.slice(0, query)}?${parameters.toString().replaceAll('%5Bredacted%5D', '[redacted]')}` : url;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Fastify's request fields, with the URL's secret query values replaced. */
function serializeRequest(request: LoggedRequest) {
  return {
    method: request.method,
    url: request.url === undefined ? undefined : redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** `json`: one JSON object a line (for log collectors); `pretty`: readable lines for a person at a terminal. */
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  format: LogFormat;
  name?: string;
  /** Where JSON lines go instead of standard output (tests read them). */
  destination?: DestinationStream;
  /** Tracing is on: each line written inside a span carries its `trace_id` and `span_id`. */
  traceIds?: boolean;
}

/** The active span's ids, for a line written inside a traced operation. */
function traceIds(): { trace_id?: string; span_id?: string } {
  const spanContext = trace.getSpan(context.active())?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/** What a person at a terminal reads: time, level and message, the fields after them; colours on a TTY. */
function prettyStream(): DestinationStream {
  return pretty({ colorize: process.stdout.isTTY, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,name,detail', singleLine: true });
}

/** The logger of every albumflow process. */
export function createLogger({ level, format, name = 'albumflow', destination, traceIds: withTraceIds = false }: LoggerOptions): Logger {
  return pino(
    {
      name,
      level,
      ...(withTraceIds ? { mixin: traceIds } : {}),
      serializers: { req: serializeRequest },
      redact: {
        paths: [
          ...redactedHeaders.map((h) => `headers["${h}"]`),
          // Tokens of API_TOKENS and TELEGRAM_BOTS, logged whole or as part of an object.
          'token',
          '*.token',
          'secretToken',
          '*.secretToken',
          '*.secret',
          '*.secrets',
          '*.apiKey',
        ],
        censor: '[redacted]',
      },
    },
    destination ?? (format === 'pretty' ? prettyStream() : undefined),
  );
}
