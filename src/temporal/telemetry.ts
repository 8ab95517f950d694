import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from '../common/log.js';

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Core's messages end in Rust debug dumps (`Status { code: Unavailable, message: "…", metadata: … }`): a
 * person reads the message inside; the whole text stays in `detail` for the JSON logs.
 */
export function readableCoreMessage(message: string): { message: string; detail?: string } {
  const dump = message.search(/\b[A-Z]\w*(?:::\w+)* ?[{(]/);
  const inner = /message: "((?:[^"\\]|\\.)*)"/.exec(message);
  if (dump < 0 || !inner) return { message };
  const lead = message.slice(0, dump).replace(/[\s:,-]+$/, '');
  return { message: lead ? `${lead}: ${inner[1]}` : inner[1]!, detail: message };
}

/**
 * Installs the Temporal runtime of this process: SDK and Core logs go to our logger (the SDK's routine
 * info at debug, Core's at warn and above), the worker's own metrics are served in Prometheus format on
 * `metricsAddress`, and the runtime leaves signals to our graceful shutdown. Call once, before any
 * connection or worker.
 */
export function installTemporalRuntime(logger: Logger, metricsAddress: string): void {
  const log = logger.child({ component: 'temporal' });
  const forward = (level: LogLevel, text: string, meta?: LogMetadata) => {
    const { message, detail } = readableCoreMessage(text);
    log[level === 'INFO' ? 'debug' : levels[level]]({ ...meta, ...(detail ? { detail } : {}) }, message);
  };
  Runtime.install({
    shutdownSignals: [],
    logger: {
      log: forward,
      trace: (message, meta) => forward('TRACE', message, meta),
      debug: (message, meta) => forward('DEBUG', message, meta),
      info: (message, meta) => forward('INFO', message, meta),
      warn: (message, meta) => forward('WARN', message, meta),
      error: (message, meta) => forward('ERROR', message, meta),
    },
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true } },
    },
  });
}
