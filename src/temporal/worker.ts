import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import {
  bundleWorkflowCode,
  Worker,
  type NativeConnection,
  type WorkerOptions,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { WorkflowActivities } from '../../workflows/activity-types.js';
import type { LifetimeActivities } from '../../workflows/lifetime-types.js';
import { workflowTracingModule } from './tracing.js';

const here = fileURLToPath(import.meta.url);
/** workflows/index.ts from sources, workflows/index.js from the compiled tree. */
export const workflowsPath = path.resolve(path.dirname(here), '../../workflows', `index${path.extname(here)}`);

/** What the workflow code is bundled with. */
export interface BundleOptions {
  /** The workflow module to bundle instead of workflows/index.ts. */
  modulePath?: string;
  /** With the OpenTelemetry workflow interceptors (tracing on). */
  traced?: boolean;
}

/** Bundles the workflow code once; workers created from the bundle start without webpack. */
export async function bundleWorkflows({
  modulePath = workflowsPath,
  traced = false,
}: BundleOptions = {}): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: modulePath,
    logger: quietBundlerLogger,
    ...(traced ? { workflowInterceptorModules: [workflowTracingModule] } : {}),
  });
}

/**
 * Bundles the workflow code in a short-lived child process and writes it to a temporary file: webpack
 * then never enters the worker's heap, which would keep it resident for the process's life.
 * `dispose` removes the file once the worker is done with it.
 */
export async function bundleWorkflowsInChildProcess({ modulePath = workflowsPath, traced = false }: BundleOptions = {}): Promise<{
  codePath: string;
  dispose: () => void;
}> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-workflows-'));
  const codePath = path.join(dir, 'workflows.js');
  const dispose = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const child = fork(here, [bundleCommand, codePath, modulePath, traced ? 'traced' : 'untraced'], { stdio: 'inherit' });
      child.once('error', reject);
      child.once('exit', (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`bundling the workflow code failed (${signal ?? `exit code ${code}`})`)),
      );
    });
  } catch (err) {
    dispose();
    throw err;
  }
  return { codePath, dispose };
}

const bundleCommand = '--bundle-workflows';

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
  activities: WorkflowActivities & LifetimeActivities;
  workflowBundle?: WorkflowBundleOption;
  /** Workflows kept in the worker's sticky cache (WORKER_MAX_CACHED_WORKFLOWS); the SDK's default when unset. */
  maxCachedWorkflows?: number;
  /** Tracing's activity interceptors and workflow span sink (src/temporal/tracing.ts); the bundle must be traced too. */
  tracing?: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
}

/**
 * Old space of the workflow threads, the SDK's worker threads that run every album the worker keeps
 * cached. V8 grows a heap long before it must collect it: without a bound a worker with thousands of open
 * albums holds far more memory than it uses. This bound holds the default sticky cache and one album of
 * 10,000 children (the fault suite's scale test).
 */
export const workflowThreadOldSpaceMb = 256;

/**
 * Each semi-space of the workflow threads' young generation. With V8's default (16 MB) a workflow thread
 * under backlog committed 34 MB of young generation beside 42 MB of old space; with 4 MB it commits 8,
 * for the same CPU per workflow task.
 */
export const workflowThreadSemiSpaceMb = 4;

/**
 * Bounds the heaps of the workflow threads. A V8 flag set now applies to the isolates created after it: the
 * SDK's workflow threads, which Worker.create starts. The process's own heap keeps its default.
 */
export function boundWorkflowThreadHeaps(): void {
  v8.setFlagsFromString(`--max-old-space-size=${workflowThreadOldSpaceMb}`);
  v8.setFlagsFromString(`--max-semi-space-size=${workflowThreadSemiSpaceMb}`);
}

export async function createAlbumWorker(options: AlbumWorkerOptions): Promise<Worker> {
  boundWorkflowThreadHeaps();
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.activities,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    ...(options.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: options.maxCachedWorkflows } : {}),
    ...options.tracing,
    shutdownGraceTime: '10s',
  });
}

// Run as a script by bundleWorkflowsInChildProcess: bundle, write, exit.
if (process.argv[1] === here && process.argv[2] === bundleCommand) {
  const { code } = await bundleWorkflows({ modulePath: process.argv[4], traced: process.argv[5] === 'traced' });
  fs.writeFileSync(process.argv[3]!, code);
}
