import { createRequire } from 'node:module';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { Tracing } from '../common/tracing.js';

/**
 * The workflow interceptors of @temporalio/interceptors-opentelemetry, bundled with the workflow code when
 * tracing is on: a span for each workflow run, signal and scheduled activity, continuing the trace the
 * client's signalWithStart carries in its headers. They add no command (the SDK's flags keep older
 * histories replaying as they ran), so a traced and an untraced worker run the same histories.
 */
export const workflowTracingModule = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

/** The client's interceptor: a span for each signalWithStart (and every other call), carried to the workflow in its headers. */
export async function clientTracingInterceptors(): Promise<WorkflowClientInterceptor[]> {
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry');
  return [new OpenTelemetryWorkflowClientInterceptor()];
}

/**
 * The worker's side: a span for each activity, continuing the workflow's span that scheduled it, and the
 * sink the workflow spans leave the sandbox by, to this process's span processor.
 */
export async function workerTracingOptions(tracing: Tracing): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'>> {
  const { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } =
    await import('@temporalio/interceptors-opentelemetry');
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) },
  };
}
