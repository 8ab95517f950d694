import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  Worker,
  type NativeConnection,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { createActivities } from '../../activities/index.js';

const here = fileURLToPath(import.meta.url);
/** workflows/index.ts from sources, workflows/index.js from the compiled tree. */
export const workflowsPath = path.resolve(path.dirname(here), '../../workflows', `index${path.extname(here)}`);

/** Bundles the workflow code once; workers created from the bundle start without webpack. */
export async function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
  log: () => undefined,
};

export interface AlbumWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: ReturnType<typeof createActivities>;
  workflowBundle?: WorkflowBundleOption;
  /** Passed through for tests and tuning. */
  maxCachedWorkflows?: number;
}

export async function createAlbumWorker(options: AlbumWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.activities,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    shutdownGraceTime: '10s',
  });
}
