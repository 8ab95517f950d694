// An OTLP/HTTP trace receiver of the tests: it accepts `POST /v1/traces` in OTLP's JSON encoding
// (OTEL_EXPORTER_OTLP_PROTOCOL=http/json), keeps every span with its resource's service name, and answers
// as a collector does. Anything else is refused, so that a misconfigured exporter fails the test.
import http from 'node:http';
import { listen } from './listen.js';

/** One span as received, its attribute values unwrapped. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** The `albumflow.roles` of the process that sent it. */
  roles: string;
  /** The `service.name` of the process that sent it. */
  service: string;
}

export interface OtlpReceiver {
  /** OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Requests refused (a wrong path, content type or body). */
  refused: number;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: KeyValue[];
  links?: Array<{ traceId: string; spanId: string }>;
}
interface ExportTraceServiceRequest {
  resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

function valueOf(value: AnyValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return '';
}

function attributesOf(list: KeyValue[] = []): Record<string, string | number | boolean> {
  return Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const refuse = (res: http.ServerResponse, status: number) => {
    refused += 1;
    res.writeHead(status).end();
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return refuse(res, 404);
      if (!req.headers['content-type']?.startsWith('application/json')) return refuse(res, 415);
      let request: ExportTraceServiceRequest;
      try {
        request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest;
      } catch {
        return refuse(res, 400);
      }
      for (const { resource, scopeSpans = [] } of request.resourceSpans ?? []) {
        const resourceAttributes = attributesOf(resource?.attributes);
        const roles = String(resourceAttributes['albumflow.roles'] ?? '');
        const service = String(resourceAttributes['service.name'] ?? '');
        for (const { spans: received = [] } of scopeSpans) {
          for (const span of received) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ? span.parentSpanId : undefined,
              name: span.name,
              attributes: attributesOf(span.attributes),
              links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
              roles,
              service,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const port = await listen(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    get refused() {
      return refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
