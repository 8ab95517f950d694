import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from '../log.js';

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Installs the Temporal runtime of this process: SDK and Core logs go to our logger (at warn and
 * above), the worker's own metrics are served in Prometheus format on `metricsAddress`, and the
 * runtime leaves signals to our graceful shutdown. Call once, before any connection or worker.
 */
export function installTemporalRuntime(logger: Logger, metricsAddress: string): void {
  const log = logger.child({ component: 'temporal' });
  const forward = (level: LogLevel, message: string, meta?: LogMetadata) => log[levels[level]](meta ?? {}, message);
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
