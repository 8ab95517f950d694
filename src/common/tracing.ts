import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type SpanOptions,
} from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * OpenTelemetry tracing, configured the standard way (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_TRACES_EXPORTER,
 * OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*). Off unless an OTLP
 * endpoint or OTEL_TRACES_EXPORTER is set: otherwise no SDK is loaded, the API stays the no-op it is by
 * default, and the request path adds no span and no hook.
 */
export interface Tracing {
  /** The processor every span of this process ends in, the workflow spans the worker's sink receives too. */
  processor: SpanProcessor;
  resource: Resource;
  /** Exports what is still buffered, then stops the SDK. */
  shutdown(): Promise<void>;
}

/** Whether the environment turns tracing on (OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off). */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = exporterNames(env);
  if (exporters.length > 0) return !exporters.includes('none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

function exporterNames(env: NodeJS.ProcessEnv): string[] {
  return (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** The OTLP protocol the standard variables name; http/protobuf when none does. */
export function otlpProtocol(env: NodeJS.ProcessEnv = process.env): string {
  return (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
}

async function exporterOf(name: string, env: NodeJS.ProcessEnv): Promise<SpanExporter> {
  if (name === 'console') return new (await import('@opentelemetry/sdk-trace-base')).ConsoleSpanExporter();
  if (name !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: albumflow exports spans with "otlp" or "console", not "${name}"`);
  const protocol = otlpProtocol(env);
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (protocol === 'http/protobuf') return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: albumflow exports over OTLP/HTTP ("http/protobuf" or "http/json"), not "${protocol}"`);
}

/**
 * Starts the OpenTelemetry SDK when the environment asks for it (tracingRequested), first thing in a
 * process: the W3C trace-context propagator, the sampler of OTEL_TRACES_SAMPLER, and one batching
 * processor per exporter. `roles` name the process's parts (the resource's `albumflow.roles`).
 */
export async function startTracing(roles: string[], env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  const [{ NodeSDK }, { BatchSpanProcessor, SimpleSpanProcessor }, resources] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  const names = exporterNames(env);
  const processors = await Promise.all(
    (names.length > 0 ? [...new Set(names)] : ['otlp']).map(async (name) => {
      const exporter = await exporterOf(name, env);
      return name === 'console' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
    }),
  );
  const processor: SpanProcessor = processors.length === 1 ? processors[0]! : fanOut(processors);
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over albumflow's defaults.
  const resource = new resources.Resource({ 'service.name': 'albumflow', 'albumflow.roles': roles.join(',') }).merge(
    resources.detectResourcesSync({
      detectors: [resources.hostDetectorSync, resources.processDetectorSync, resources.envDetectorSync],
    }),
  );
  const sdk = new NodeSDK({ resource, autoDetectResources: false, spanProcessors: [processor], logRecordProcessors: [] });
  sdk.start();
  let stopped: Promise<void> | undefined;
  return { processor, resource, shutdown: () => (stopped ??= sdk.shutdown()) };
}

/** One processor that hands every span to each of several (two exporters named in OTEL_TRACES_EXPORTER). */
function fanOut(processors: SpanProcessor[]): SpanProcessor {
  return {
    onStart: (span, parent) => processors.forEach((p) => p.onStart(span, parent)),
    onEnd: (span) => processors.forEach((p) => p.onEnd(span)),
    forceFlush: async () => void (await Promise.all(processors.map((p) => p.forceFlush()))),
    shutdown: async () => void (await Promise.all(processors.map((p) => p.shutdown()))),
  };
}

/** albumflow's own spans (webhook requests, ingest batches, signals, downloads, decisions, notifications). */
export const tracer = trace.getTracer('albumflow');

/** The active span's context when it is sampled (recording); undefined when tracing is off or dropped it. */
export function sampledSpanContext(): SpanContext | undefined {
  const span = trace.getSpan(context.active());
  if (!span?.isRecording()) return undefined;
  const spanContext = span.spanContext();
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** A span context as a W3C `traceparent` (version 00). */
export function traceparentOf(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & TraceFlags.SAMPLED) !== 0 ? '01' : '00';
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** Links to the spans these `traceparent` values name (invalid ones are skipped). */
export function linksTo(traceparents: Iterable<string>): Link[] {
  const links: Link[] = [];
  for (const traceparent of new Set(traceparents)) {
    const spanContext = parseTraceParent(traceparent);
    if (spanContext && isSpanContextValid(spanContext)) links.push({ context: spanContext });
  }
  return links;
}

/** Adds the W3C trace-context headers of the active span (none when tracing is off) to outgoing headers. */
export function withTraceHeaders(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * Runs `work` in a new active span named `name`: an error thrown sets the span's status (its message,
 * never its stack) and is thrown on; the span ends when `work` settles.
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  return inSpanOf(context.active(), name, options, work);
}

/**
 * inSpan, as a child of the span a `traceparent` names (stored with work that another process picks up
 * later); a root span when there is none or it is not valid.
 */
export async function inSpanContinuing<T>(
  traceparent: string | null | undefined,
  name: string,
  options: SpanOptions,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = traceparent ? parseTraceParent(traceparent) : null;
  if (!parent || !isSpanContextValid(parent)) return inSpan(name, { ...options, root: true }, work);
  return inSpanOf(trace.setSpanContext(ROOT_CONTEXT, { ...parent, isRemote: true }), name, options, work);
}

async function inSpanOf<T>(parent: Context, name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, options, parent, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Sets attributes on a span that records them (a span sampling dropped costs nothing more). */
export function annotate(span: Span, attributes: Attributes): void {
  if (span.isRecording()) span.setAttributes(attributes);
}
