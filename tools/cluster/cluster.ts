import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { projectRoot } from '../../src/common/paths.js';
import { dynamicConfigFile } from '../../src/temporal/dynamic-config.js';
import { pickPort } from '../../src/embedded/ports.js';
import type { TemporalDatabase } from './database.js';
import type { ClusterToolPaths } from './builds.js';

/** The server's static configuration, one template for every installation (the server renders it from the environment). */
export const serverConfigTemplate = path.join(projectRoot, 'deploy', 'temporal-server.yaml');
/** The UI server reads `<root>/<config>/<env>.yaml`: here deploy/temporal-ui.yaml. */
const uiConfig = { root: projectRoot, dir: 'deploy', env: 'temporal-ui' };

const temporalServices = ['frontend', 'history', 'matching', 'worker'] as const;
type TemporalService = (typeof temporalServices)[number];
/** Every service and the UI listen on loopback: the cluster serves the albumflow processes of this machine. */
const host = '127.0.0.1';

export interface ClusterPorts {
  /** The gRPC frontend albumflow, the CLI and the UI connect to. */
  frontend: number;
  frontendHttp: number;
  /** Internal gRPC ports of the other services. */
  history: number;
  matching: number;
  worker: number;
  /** Ringpop membership port of each service. */
  membership: Record<TemporalService, number>;
  /** The Prometheus endpoint of each server process, in process order (one, or one per service). */
  metrics: number[];
  ui: number;
}

/** The ports of the temporalio/server image, the UI on 8080 and metrics from 8000 as in docker-compose.yml. */
export function defaultClusterPorts(split: boolean): ClusterPorts {
  return {
    frontend: 7233,
    frontendHttp: 7243,
    history: 7234,
    matching: 7235,
    worker: 7239,
    membership: { frontend: 6933, history: 6934, matching: 6935, worker: 6939 },
    metrics: split ? [8000, 8001, 8002, 8003] : [8000],
    ui: 8080,
  };
}

/**
 * Free ports for every listener, for clusters that must not collide with anything (tests). The server
 * records each host's membership port in a PostgreSQL smallint column and exits when it does not fit.
 */
export async function freeClusterPorts(split: boolean): Promise<ClusterPorts> {
  const take = () => pickPort(host);
  const membership = () => pickPort(host, 32_768);
  return {
    frontend: await take(),
    frontendHttp: await take(),
    history: await take(),
    matching: await take(),
    worker: await take(),
    membership: { frontend: await membership(), history: await membership(), matching: await membership(), worker: await membership() },
    metrics: await Promise.all((split ? temporalServices : [undefined]).map(take)),
    ui: await take(),
  };
}

export interface ClusterOptions {
  tools: ClusterToolPaths;
  database: TemporalDatabase;
  ports: ClusterPorts;
  /** One process per service instead of one process running all four. */
  split?: boolean;
  /** Fixed for the life of the databases: the server refuses to start with another count later. */
  historyShards?: number;
  /** Runs the Web UI server too (default true). */
  ui?: boolean;
  /** The UI's namespace when it opens. */
  uiNamespace?: string;
  /** Each process appends its output to `<logDir>/<process>.log`. */
  logDir: string;
  logLevel?: string;
  /** Called when a process exits without being asked to. */
  onUnexpectedExit?: (name: string, code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface TemporalCluster {
  /** The frontend, host:port (TEMPORAL_ADDRESS for albumflow). */
  address: string;
  uiUrl: string | undefined;
  /** Prometheus endpoint of each server process, by process name. */
  metricsUrls: Record<string, string>;
  /** The server processes and the UI, by name, with their pids while they run. */
  pids(): Record<string, number | undefined>;
  /** Starts every process (again: same ports, same databases) and resolves once all services answer. */
  start(): Promise<void>;
  /** SIGTERM, the server's graceful shutdown (SIGKILL if it takes longer than the grace period). */
  stop(): Promise<void>;
}

interface ProcessSpec {
  name: string;
  file: string;
  args: string[];
  env: Record<string, string>;
}

const stopGraceMs = 20_000;
const startTimeoutMs = 90_000;

/** A Temporal server (one process or one per service) on PostgreSQL, with its Web UI; not started yet. */
export function temporalCluster(options: ClusterOptions): TemporalCluster {
  const { ports, database: db } = options;
  const groups: Array<{ name: string; services: readonly TemporalService[] }> = options.split
    ? temporalServices.map((service) => ({ name: `temporal-${service}`, services: [service] }))
    : [{ name: 'temporal-server', services: temporalServices }];
  if (ports.metrics.length !== groups.length) throw new Error(`${groups.length} metrics ports needed, ${ports.metrics.length} given`);

  const serverEnv: Record<string, string> = {
    POSTGRES_SEEDS: db.host,
    DB_PORT: String(db.port),
    POSTGRES_USER: db.user,
    POSTGRES_PWD: db.password,
    DBNAME: db.names.store,
    VISIBILITY_DBNAME: db.names.visibility,
    SQL_TLS_ENABLED: String(db.tls.enabled),
    SQL_HOST_VERIFICATION: String(db.tls.verifyHost),
    ...(db.tls.caFile ? { SQL_CA: db.tls.caFile } : {}),
    NUM_HISTORY_SHARDS: String(options.historyShards ?? 4),
    BIND_ON_IP: host,
    FRONTEND_GRPC_PORT: String(ports.frontend),
    FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    HISTORY_GRPC_PORT: String(ports.history),
    MATCHING_GRPC_PORT: String(ports.matching),
    WORKER_GRPC_PORT: String(ports.worker),
    FRONTEND_MEMBERSHIP_PORT: String(ports.membership.frontend),
    HISTORY_MEMBERSHIP_PORT: String(ports.membership.history),
    MATCHING_MEMBERSHIP_PORT: String(ports.membership.matching),
    WORKER_MEMBERSHIP_PORT: String(ports.membership.worker),
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfigFile,
    LOG_LEVEL: options.logLevel ?? 'info',
    // No authorizer: every service listens on loopback only.
    TEMPORAL_ALLOW_NO_AUTH: 'true',
  };
  const address = `${host}:${ports.frontend}`;
  const specs: ProcessSpec[] = groups.map((group, i) => ({
    name: group.name,
    file: options.tools.server,
    args: ['--config-file', serverConfigTemplate, 'start', ...group.services.flatMap((service) => ['--service', service])],
    env: { ...serverEnv, PROMETHEUS_ENDPOINT: `${host}:${ports.metrics[i]}` },
  }));
  const withUi = options.ui !== false;
  if (withUi) {
    specs.push({
      name: 'temporal-ui',
      file: options.tools.ui,
      args: ['--root', uiConfig.root, '--config', uiConfig.dir, '--env', uiConfig.env, 'start'],
      env: {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_UI_IP: host,
        TEMPORAL_UI_PORT: String(ports.ui),
        TEMPORAL_DEFAULT_NAMESPACE: options.uiNamespace ?? 'default',
      },
    });
  }
  fs.mkdirSync(options.logDir, { recursive: true });
  const processes = specs.map((spec) => serverProcess(spec, options.logDir, options.onUnexpectedExit));

  return {
    address,
    uiUrl: withUi ? `http://${host}:${ports.ui}` : undefined,
    metricsUrls: Object.fromEntries(groups.map((group, i) => [group.name, `http://${host}:${ports.metrics[i]}/metrics`])),
    pids: () => Object.fromEntries(processes.map((p) => [p.name, p.pid()])),
    async start() {
      try {
        // One at a time, each once it listens: server processes that start together on fresh databases race
        // to write the cluster's metadata, and the losers exit.
        for (const [i, p] of processes.entries()) {
          p.start();
          if (i < groups.length) await untilListening(ports[groups[i]!.services[0]!], p);
        }
        await waitUntilServing(address, processes);
        if (withUi) await waitUntilUiAnswers(`http://${host}:${ports.ui}`, processes.at(-1)!);
      } catch (err) {
        await Promise.all(processes.map((p) => p.stop('SIGKILL')));
        throw err;
      }
    },
    stop: async () => {
      await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    },
  };
}

/** Creates the cluster and starts it. */
export async function startTemporalCluster(options: ClusterOptions): Promise<TemporalCluster> {
  const cluster = temporalCluster(options);
  await cluster.start();
  return cluster;
}

/** One process of the cluster (a server group or the UI): the cluster may stop it and start it again, its log appended to. */
interface ServerProcess {
  name: string;
  logPath: string;
  pid(): number | undefined;
  /** The exit of the current run, if it ended. */
  exitedWith(): string | undefined;
  start(): void;
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

function serverProcess(spec: ProcessSpec, logDir: string, onUnexpectedExit: ClusterOptions['onUnexpectedExit']): ServerProcess {
  const logPath = path.join(logDir, `${spec.name}.log`);
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let exit: string | undefined;
  let stopping = false;
  return {
    name: spec.name,
    logPath,
    pid: () => child?.pid,
    exitedWith: () => exit,
    start() {
      if (child) return;
      const log = fs.openSync(logPath, 'a');
      fs.writeSync(log, `\n=== ${spec.name} started ${new Date().toISOString()}\n`);
      // A process group of its own: a Ctrl-C in the terminal reaches only the launcher, which stops
      // the servers in order. A clean environment: the server reads only what the template names.
      const started = spawn(spec.file, spec.args, {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...spec.env },
        stdio: ['ignore', log, log],
        detached: true,
      });
      fs.closeSync(log);
      child = started;
      stopping = false;
      exit = undefined;
      exited = new Promise((resolve) => {
        started.once('exit', (code, signal) => {
          exit = signal ? `signal ${signal}` : `exit code ${code}`;
          if (child === started) child = undefined;
          if (!stopping) onUnexpectedExit?.(spec.name, code, signal);
          resolve();
        });
        started.once('error', (err) => {
          exit = err.message;
          if (child === started) child = undefined;
          resolve();
        });
      });
    },
    async stop(signal) {
      const running = child;
      if (!running) return;
      stopping = true;
      running.kill(signal);
      const timer = setTimeout(() => running.kill('SIGKILL'), stopGraceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

function logTail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().slice(-3000);
  } catch {
    return '';
  }
}

/**
 * Resolves once the frontend passes its health check and the other services answer through it: matching
 * describes a task queue, history looks up a workflow (NotFound is its answer). Fails when a process exits first.
 */
async function waitUntilServing(address: string, processes: ServerProcess[]): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  let lastError = 'no answer yet';
  for (;;) {
    const dead = processes.find((p) => p.exitedWith() !== undefined);
    if (dead)
      throw new Error(`${dead.name} exited (${dead.exitedWith()}) before the cluster served; ${dead.logPath}:\n${logTail(dead.logPath)}`);
    if (Date.now() > deadline) {
      throw new Error(
        `the Temporal cluster at ${address} did not serve within ${startTimeoutMs / 1000} s (${lastError}); logs in ${path.dirname(processes[0]!.logPath)}`,
      );
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        const { status } = await connection.healthService.check({ service: 'temporal.api.workflowservice.v1.WorkflowService' });
        if (status !== proto.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING) throw new Error(`frontend health: status ${status}`);
        const namespace = 'temporal-system';
        await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: 'albumflow-readiness' } });
        try {
          await connection.workflowService.describeWorkflowExecution({ namespace, execution: { workflowId: 'albumflow-readiness' } });
        } catch (err) {
          if ((err as { code?: number }).code !== 5) throw err; // gRPC NOT_FOUND: history answered
        }
      } finally {
        await connection.close();
      }
      if (processes.every((p) => p.exitedWith() === undefined)) return;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function untilListening(port: number, p: ServerProcess): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (p.exitedWith() !== undefined)
      throw new Error(`${p.name} exited (${p.exitedWith()}) before it listened; ${p.logPath}:\n${logTail(p.logPath)}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host, port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline)
      throw new Error(`${p.name} did not listen on ${host}:${port} within ${startTimeoutMs / 1000} s; see ${p.logPath}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function waitUntilUiAnswers(url: string, ui: ServerProcess): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (ui.exitedWith() !== undefined) throw new Error(`${ui.name} exited (${ui.exitedWith()}); ${ui.logPath}:\n${logTail(ui.logPath)}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`the Temporal UI at ${url} did not answer within ${startTimeoutMs / 1000} s: ${(err as Error).message}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
