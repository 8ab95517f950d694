import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { linksTo, otlpProtocol, sampledSpanContext, startTracing, traceparentOf, tracingRequested } from '../../src/common/tracing.js';

describe('when tracing is on', () => {
  it('is off unless an OTLP endpoint or OTEL_TRACES_EXPORTER is set, and off when told', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
  });

  it('exports over the OTLP/HTTP protocol the standard variables name, protobuf by default', async () => {
    expect(otlpProtocol({})).toBe('http/protobuf');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })).toBe(
      'http/protobuf',
    );
    await expect(
      startTracing(['ingress'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).rejects.toThrow(/OTLP\/HTTP/);
  });

  it('starts nothing when off: the API stays a no-op, and no span context is found', async () => {
    expect(await startTracing(['ingress'], {})).toBeUndefined();
    const span = trace.getTracer('test').startSpan('nothing');
    expect(span.isRecording()).toBe(false);
    expect(sampledSpanContext()).toBeUndefined();
  });

  it('writes and reads W3C traceparents', () => {
    const context = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
    const traceparent = traceparentOf(context);
    expect(traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(linksTo([traceparent, traceparent, 'not a traceparent']).map((link) => link.context)).toEqual([
      expect.objectContaining({ traceId: context.traceId, spanId: context.spanId, traceFlags: 1 }),
    ]);
  });
});
