import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log warnings and errors only; the runtime is installed once per test process.
try {
  Runtime.install({ logger: new DefaultLogger((process.env.TEST_TEMPORAL_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN') });
} catch {
  // already installed by an earlier test file in this process
}
