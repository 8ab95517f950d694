// The environment albumflow is started with by the stacks of the harness and the bench, and by the tests
// of `npm start`: what this process passes on, albumflow's own variables, and the allocator's settings
// docker-compose gives its processes.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../../src/common/paths.js';

/** This process's environment without anything of albumflow's (DATABASE_URL, TEMPORAL_*, PG*, ALBUMFLOW_*, TELEGRAM_*). */
export function userEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => name !== 'DATABASE_URL' && !['TEMPORAL_', 'PG', 'ALBUMFLOW_', 'TELEGRAM_'].some((prefix) => name.startsWith(prefix)),
    ),
  );
}

export interface AppEnvironmentOptions {
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
  /** WORKSPACE_SECRETS. */
  workspaces?: Record<string, string[]>;
  quietPeriodMs: number;
  maxWaitMs: number;
  lateWindowMs: number;
  dataDir?: string;
  mediaDir: string;
  notify?: { url: string; secret: string };
  logLevel: string;
}

/**
 * The key every albumflow process of a stack seals its stored secrets under: processes that share a
 * database must share it (each would otherwise generate its own in its DATA_DIR). A test key, nothing else.
 */
export const harnessSecretKey = 'a1b0f10ea1b0f10ea1b0f10ea1b0f10ea1b0f10ea1b0f10ea1b0f10ea1b0f10e';

/**
 * The environment of an albumflow on this machine (the variables of the README's configuration table),
 * downloading from media servers on the loopback address, which the download guard refuses unless told.
 */
export function appEnvironment(options: AppEnvironmentOptions): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    DATABASE_URL: options.databaseUrl,
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    ...(options.workspaces ? { WORKSPACE_SECRETS: JSON.stringify(options.workspaces) } : {}),
    QUIET_PERIOD_MS: String(options.quietPeriodMs),
    MAX_WAIT_MS: String(options.maxWaitMs),
    LATE_WINDOW_MS: String(options.lateWindowMs),
    ...(options.dataDir ? { DATA_DIR: options.dataDir } : {}),
    MEDIA_DIR: options.mediaDir,
    MEDIA_ALLOW_PRIVATE_NETWORKS: 'true',
    ...(options.notify ? { NOTIFY_URL: options.notify.url, NOTIFY_SECRET: options.notify.secret } : {}),
    LOG_LEVEL: options.logLevel,
    ALBUMFLOW_SECRET_KEY: harnessSecretKey,
  };
}

/** A service of docker-compose.yml as the harness reads it. */
function composeService(service: 'ingress' | 'worker'): { environment?: Record<string, string>; command?: string[] } {
  const compose = parse(fs.readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string>; command?: string[] }>;
  };
  return compose.services[service] ?? {};
}

/**
 * The settings of glibc's allocator (its MALLOC_* variables) docker-compose gives the ingress or the worker:
 * the bench runs each with its own, and the thumbnail test the ingress's.
 */
export function composeAllocatorEnvironment(service: 'ingress' | 'worker'): Record<string, string> {
  return Object.fromEntries(Object.entries(composeService(service).environment ?? {}).filter(([name]) => name.startsWith('MALLOC_')));
}

/** The flags docker-compose gives Node for the ingress or the worker (between `node` and the script): the bench runs each with them. */
export function composeNodeFlags(service: 'ingress' | 'worker'): string[] {
  const command = composeService(service).command ?? [];
  return command.slice(1).filter((arg) => arg.startsWith('--'));
}
