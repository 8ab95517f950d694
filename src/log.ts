import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Header names whose values are never written to a log line (requests log no headers at all). */
const redactedHeaders = ['x-unifyport-signature', 'x-albumflow-signature', 'authorization', 'cookie', 'set-cookie'];

/** Query parameters whose values are never written to a log line (the sign-in link's code). */
const redactedQueryParameters = new Set(['code', 'token', 'access_token']);

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

/** The logger of every albumflow process; tests pass a destination to read what it wrote. */
export function createLogger(level: string, name = 'albumflow', destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    serializers: { req: serializeRequest },
    redact: {
      paths: [
        ...redactedHeaders.map((h) => `headers["${h}"]`),
        'token',
        '*.token',
        '*.secret',
        '*.secrets',
        '*.apiKey',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
