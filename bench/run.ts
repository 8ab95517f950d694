// `npm run bench`: starts the whole stack on this machine (a fresh PostgreSQL database, a Temporal
// dev server, the ingress and the worker as separate processes, the ceiling server) and a load
// generator, runs the phases, and reports as JSON under bench/results/ and as a section appended to
// BENCHMARKS.md. Everything it started is stopped and its databases dropped, also on failure and Ctrl-C.
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { connectionConfig, connectionUrl, createPool, withDatabase, type Pool } from '../src/db/pool.js';
import { migrate } from '../src/db/migrate.js';
import { locateTemporalCli } from '../src/temporal/cli.js';
import { freePort, startDevServer, type DevServer } from '../src/temporal/devserver.js';
import type { LoadMessage, LoadPhase, LoadReply, PhaseResult, RequestRecord } from './load.js';
import {
  childPids,
  cpuSeconds,
  machineCpu,
  MemorySampler,
  postgresCpuSeconds,
  readMemory,
  spawnNode,
  type ManagedProcess,
} from './processes.js';
import {
  benchmarksHeader,
  evaluateTargets,
  megabytes,
  percentiles,
  ratio,
  renderMarkdown,
  round,
  stepStats,
  type BenchReport,
  type Correctness,
  type EndToEnd,
  type IngestStep,
  type PhaseCpu,
  type ProcessMemory,
  type TemporalCost,
} from './report.js';
import type { AlbumShape, WorkloadOptions } from './workload.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const phaseNames = ['ingest', 'sustained', 'burst', 'scale'] as const;
export type PhaseName = (typeof phaseNames)[number];

export interface BenchOptions {
  /** Which sections to run (the others are reported as not measured). */
  phases: PhaseName[];
  /** Offered rates of the open-loop ingest steps, requests/s. */
  rates: number[];
  stepSeconds: number;
  /** Requests in flight at most in the open-loop steps. */
  concurrency: number;
  /** Requests in flight in the closed-loop step. */
  closedLoopConcurrency: number;
  warmupSeconds: number;
  /** Offered rate of the end-to-end phase, requests/s (5% are redeliveries). */
  sustainedRate: number;
  sustainedSeconds: number;
  /** 10-photo albums per second in the burst phase, all children of an album sent at once. */
  burstAlbumsPerSecond: number;
  burstSeconds: number;
  /** Albums kept open (late window) before memory is read; small albums are added to reach it. */
  openAlbums: number;
  /** Offered rate of the scale top-up, requests/s (below the pipeline's capacity, so memory is read at steady state). */
  scaleRate: number;
  quietPeriodMs: number;
  maxWaitMs: number;
  lateWindowMs: number;
  albums: AlbumShape;
  redeliveryShare: number;
  seed: number;
  /** How long to wait for every accepted child of a phase to be decided. */
  settleTimeoutMs: number;
  /** Run the ingress and the worker with --cpu-prof (profiles under the run's results folder). */
  profile: boolean;
  /** The PostgreSQL server the run's databases are created on (as DATABASE_URL; its database name is ignored). */
  databaseUrl: string | undefined;
  /** Use this Temporal frontend instead of starting a dev server. */
  temporalAddress: string | undefined;
  resultsDir: string;
  /** Where the markdown section is appended; null: nowhere. */
  benchmarksPath: string | null;
  log: (line: string) => void;
  signal?: AbortSignal;
}

export const defaultOptions: BenchOptions = {
  phases: [...phaseNames],
  rates: [100, 200, 400],
  stepSeconds: 10,
  concurrency: 64,
  closedLoopConcurrency: 32,
  warmupSeconds: 15,
  sustainedRate: 215,
  sustainedSeconds: 20,
  burstAlbumsPerSecond: 20,
  burstSeconds: 10,
  openAlbums: 5000,
  scaleRate: 100,
  quietPeriodMs: 1000,
  maxWaitMs: 60_000,
  lateWindowMs: 3_600_000,
  albums: { minChildren: 1, maxChildren: 10, totalShare: 0.5 },
  redeliveryShare: 0.05,
  seed: 20260929,
  settleTimeoutMs: 300_000,
  profile: false,
  databaseUrl: process.env.DATABASE_URL,
  temporalAddress: undefined,
  resultsDir: path.join(repoRoot, 'bench', 'results'),
  benchmarksPath: path.join(repoRoot, 'BENCHMARKS.md'),
  log: (line) => process.stderr.write(`${line}\n`),
};

/** Seconds, not minutes: what the test runs to prove the harness works. */
export const tinyOptions: Partial<BenchOptions> = {
  rates: [20],
  stepSeconds: 2,
  concurrency: 8,
  closedLoopConcurrency: 4,
  warmupSeconds: 0,
  sustainedRate: 20,
  sustainedSeconds: 2,
  burstAlbumsPerSecond: 2,
  burstSeconds: 2,
  openAlbums: 100,
  quietPeriodMs: 300,
  maxWaitMs: 20_000,
  settleTimeoutMs: 120_000,
};

export interface BenchOutcome {
  report: BenchReport;
  jsonPath: string;
  markdown: string;
}

interface AppPhase {
  name: string;
  records: RequestRecord[];
  cost: TemporalCost;
}

type Metrics = Map<string, number>;

/** Sums every sample of each metric name (labels ignored); histograms keep their _sum and _count. */
function parsePrometheus(text: string): Metrics {
  const metrics: Metrics = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const value = Number(match[2]);
    if (Number.isFinite(value)) metrics.set(match[1]!, (metrics.get(match[1]!) ?? 0) + value);
  }
  return metrics;
}

async function scrape(url: string, token?: string): Promise<Metrics> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return parsePrometheus(await response.text());
}

function delta(after: Metrics, before: Metrics, name: string): number {
  return (after.get(name) ?? 0) - (before.get(name) ?? 0);
}

function workflowIdOf(record: RequestRecord): string | null {
  return record.albumKey === null ? null : `album:${record.albumKey}`;
}

/** Accepted children by album workflow id. */
function acceptedChildren(records: readonly RequestRecord[]): Map<string, Set<string>> {
  const byWorkflow = new Map<string, Set<string>>();
  for (const record of records) {
    const workflowId = workflowIdOf(record);
    if (record.status !== 202 || workflowId === null) continue;
    const children = byWorkflow.get(workflowId) ?? new Set<string>();
    children.add(record.messageId);
    byWorkflow.set(workflowId, children);
  }
  return byWorkflow;
}

function childCount(byWorkflow: Map<string, Set<string>>): number {
  let count = 0;
  for (const children of byWorkflow.values()) count += children.size;
  return count;
}

interface DecisionRow {
  workflow_id: string;
  seq: number;
  trigger: string;
  child_message_ids: string[];
  recorded_ms: number;
}

async function decisionsOf(pool: Pool, workflowIds: string[]): Promise<Map<string, DecisionRow[]>> {
  const { rows } = await pool.query<DecisionRow>(
    `SELECT workflow_id, seq, trigger, child_message_ids, extract(epoch FROM recorded_at)::float8 * 1000 AS recorded_ms
       FROM decisions WHERE workflow_id = ANY($1::text[]) ORDER BY workflow_id, seq`,
    [workflowIds],
  );
  const byWorkflow = new Map<string, DecisionRow[]>();
  for (const row of rows) {
    const list = byWorkflow.get(row.workflow_id) ?? [];
    list.push(row);
    byWorkflow.set(row.workflow_id, list);
  }
  return byWorkflow;
}

/** Accepted children (workflow id → message ids) that are not stored in the database behind `pool`. */
async function uncommitted(pool: Pool, expected: Map<string, Set<string>>): Promise<string[]> {
  const { rows } = await pool.query<{ workflow_id: string; message_id: string }>(
    `SELECT a.workflow_id, m.message_id FROM messages m JOIN albums a ON a.id = m.album_pk WHERE a.workflow_id = ANY($1::text[])`,
    [[...expected.keys()]],
  );
  const stored = new Set(rows.map((row) => `${row.workflow_id} ${row.message_id}`));
  const missing: string[] = [];
  for (const [workflowId, children] of expected) {
    for (const child of children) if (!stored.has(`${workflowId} ${child}`)) missing.push(`${workflowId} ${child}`);
  }
  return missing;
}

function undecided(expected: Map<string, Set<string>>, decisions: Map<string, DecisionRow[]>): string[] {
  const missing: string[] = [];
  for (const [workflowId, children] of expected) {
    const decided = new Set((decisions.get(workflowId) ?? []).flatMap((d) => d.child_message_ids));
    for (const child of children) if (!decided.has(child)) missing.push(`${workflowId} ${child}`);
  }
  return missing;
}

function endToEnd(phase: string, records: readonly RequestRecord[], decisions: Map<string, DecisionRow[]>, quietPeriodMs: number): EndToEnd {
  interface Album {
    size: number;
    hasTotal: boolean;
    lastAck: number;
    accepted: Set<string>;
  }
  const albums = new Map<string, Album>();
  for (const record of records) {
    const workflowId = workflowIdOf(record);
    if (record.status !== 202 || workflowId === null) continue;
    const album = albums.get(workflowId) ?? { size: record.albumSize, hasTotal: record.albumHasTotal, lastAck: 0, accepted: new Set<string>() };
    album.accepted.add(record.messageId);
    if (record.duplicate === false) album.lastAck = Math.max(album.lastAck, record.ackAt);
    albums.set(workflowId, album);
  }
  const withTotal: number[] = [];
  const withoutTotal: number[] = [];
  let otherWithTotal = 0;
  let otherWithoutTotal = 0;
  for (const [workflowId, album] of albums) {
    if (album.accepted.size !== album.size || album.lastAck === 0) continue;
    const first = decisions.get(workflowId)?.[0];
    const complete = first !== undefined && first.child_message_ids.length === album.size;
    if (album.hasTotal) {
      if (complete && first.trigger === 'expected_count_reached') withTotal.push(first.recorded_ms - album.lastAck);
      else otherWithTotal += 1;
    } else if (complete && first.trigger === 'quiet_period') {
      withoutTotal.push(first.recorded_ms - album.lastAck - quietPeriodMs);
    } else {
      otherWithoutTotal += 1;
    }
  }
  const stats = stepStats(records, false);
  const newChildren = records.filter((r) => r.status === 202 && r.duplicate === false).length;
  const roundAll = (values: number[]) => {
    const p = percentiles(values);
    const r = (v: number | null) => (v === null ? null : round(v, 1));
    return { count: p.count, p50: r(p.p50), p90: r(p.p90), p99: r(p.p99), max: r(p.max) };
  };
  return {
    phase,
    childrenPerS: stats.durationS > 0 ? round(newChildren / stats.durationS, 1) : 0,
    withTotal: { albums: withTotal.length, decidedOtherwise: otherWithTotal, ms: roundAll(withTotal) },
    withoutTotal: { albums: withoutTotal.length, decidedOtherwise: otherWithoutTotal, ms: roundAll(withoutTotal) },
  };
}

function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  return (require(`${name}/package.json`) as { version: string }).version;
}

/** The commit the run measured, and how many files of the working tree differed from it. */
async function sourceVersion(): Promise<string> {
  const git = (args: string[]) => promisify(execFile)('git', args, { cwd: repoRoot }).then(({ stdout }) => stdout.trim());
  const commit = await git(['rev-parse', '--short', 'HEAD']);
  const changed = (await git(['status', '--porcelain', '--untracked-files=no'])).split('\n').filter(Boolean).length;
  return changed === 0 ? commit : `${commit} with ${changed} modified files`;
}

async function temporalCliVersion(): Promise<string> {
  const cli = await locateTemporalCli({ allowBuild: false });
  if (cli.kind !== 'binary') return 'SDK download';
  const { stdout } = await promisify(execFile)(cli.path, ['--version']);
  return stdout.trim().replace(/^temporal version /, '');
}

/** Counts warnings and errors (pino level ≥ 40) by message in a process log. */
function countLogProblems(file: string, into: Record<string, number>): void {
  if (!fs.existsSync(file)) return;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { level?: number; msg?: string };
      if ((entry.level ?? 0) >= 40) into[entry.msg ?? '?'] = (into[entry.msg ?? '?'] ?? 0) + 1;
    } catch {
      // not a log line
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export async function runBench(overrides: Partial<BenchOptions> = {}): Promise<BenchOutcome> {
  const options: BenchOptions = { ...defaultOptions, ...overrides };
  const { log, signal } = options;
  const startedAt = new Date();
  const runTag = `${startedAt.toISOString().replace(/[:.]/g, '-')}-${crypto.randomBytes(3).toString('hex')}`;
  const runDir = path.join(options.resultsDir, runTag);
  const measuredSource = sourceVersion().catch(() => 'unknown');
  fs.mkdirSync(runDir, { recursive: true });

  const closers: Array<{ name: string; close: () => Promise<unknown> }> = [];
  const cleanUp = async () => {
    for (const { name, close } of closers.reverse()) {
      await close().catch((err: unknown) => log(`bench: could not stop ${name}: ${(err as Error).message}`));
    }
    closers.length = 0;
  };

  try {
    const base = connectionConfig(options.databaseUrl);
    const appDatabase = `albumflow_bench_${process.pid}_${Date.now()}`;
    const ceilingDatabase = `${appDatabase}_ceiling`;
    const ingressAloneDatabase = `${appDatabase}_ingress_alone`;
    const runs = (phase: PhaseName) => options.phases.includes(phase);
    const admin = new pg.Client(withDatabase(base, 'postgres'));
    await admin.connect();
    closers.push({ name: 'the admin connection', close: () => admin.end() });
    for (const database of [appDatabase, ceilingDatabase, ...(runs('ingest') ? [ingressAloneDatabase] : [])]) {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
      closers.push({ name: `database ${database}`, close: () => admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`) });
      await migrate(withDatabase(base, database));
    }
    const appDb = withDatabase(base, appDatabase);
    const pool = createPool(appDb, { max: 3, applicationName: 'albumflow-bench' });
    closers.push({ name: 'the bench pool', close: () => pool.end() });

    let devServer: DevServer | undefined;
    let temporalAddress = options.temporalAddress;
    if (!temporalAddress) {
      log('bench: starting the Temporal dev server');
      devServer = await startDevServer({ port: 0, uiPort: false });
      closers.push({ name: 'the Temporal dev server', close: () => devServer!.stop() });
      temporalAddress = devServer.address;
    }
    const connection = await Connection.connect({ address: temporalAddress });
    closers.push({ name: 'the Temporal connection', close: () => connection.close() });
    const temporal = new Client({ connection, namespace: 'default' });

    const workspace = `bench-${crypto.randomBytes(4).toString('hex')}`;
    const secret = crypto.randomBytes(24).toString('hex');
    const taskQueue = `bench-${runTag}`;
    const workerMetricsPort = await freePort();
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('TEMPORAL_') && name !== 'DATABASE_URL' && !name.startsWith('PG')),
    );
    const metricsToken = crypto.randomBytes(32).toString('base64url');
    const albumEnv = {
      ...inherited,
      API_TOKENS: JSON.stringify({ [metricsToken]: ['*'] }),
      HOST: '127.0.0.1',
      PORT: '0',
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKSPACE_SECRETS: JSON.stringify({ [workspace]: [secret] }),
      QUIET_PERIOD_MS: String(options.quietPeriodMs),
      MAX_WAIT_MS: String(options.maxWaitMs),
      LATE_WINDOW_MS: String(options.lateWindowMs),
      LOG_LEVEL: 'warn',
      DATA_DIR: path.join(runDir, 'data'),
      MEDIA_DIR: path.join(runDir, 'media'),
    };
    const profileArgs = (name: string) => (options.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(runDir, 'profiles', name)}`] : []);
    const start = async (name: string, script: string, env: NodeJS.ProcessEnv, ready: RegExp, extraArgs: string[] = [], ipc = false) => {
      const started = await spawnNode({
        name,
        args: [...extraArgs, '--import', 'tsx', script],
        cwd: repoRoot,
        env,
        ready,
        readyTimeoutMs: 180_000,
        logFile: path.join(runDir, `${name}.log`),
        ipc,
      });
      closers.push({ name, close: () => started.stop() });
      return started;
    };

    log('bench: starting the worker, the ingress, the ceiling and the load generator');
    const startups = await Promise.allSettled([
      start('worker', 'src/worker.ts', { ...albumEnv, DATABASE_URL: connectionUrl(appDb), WORKER_METRICS_PORT: String(workerMetricsPort) }, /albumflow worker polling/, profileArgs('worker')),
      start('ingress', 'src/ingress.ts', { ...albumEnv, DATABASE_URL: connectionUrl(appDb) }, /listening on (http:\/\/\S+?),/, profileArgs('ingress')),
      start('ceiling', 'bench/ceiling.ts', { ...albumEnv, DATABASE_URL: connectionUrl(withDatabase(base, ceilingDatabase)) }, /ceiling listening on (\S+)/),
      start('load', 'bench/load.ts', { ...inherited }, /load generator ready/, [], true),
      ...(runs('ingest')
        ? [start('ingress alone', 'bench/ingress-alone.ts', { ...albumEnv, DATABASE_URL: connectionUrl(withDatabase(base, ingressAloneDatabase)) }, /listening on (http:\/\/\S+)/)]
        : []),
    ]);
    const failed = startups.find((startup) => startup.status === 'rejected');
    if (failed) throw failed.reason;
    const [worker, ingress, ceiling, load, ingressAlone] = startups.map((startup) => (startup as PromiseFulfilledResult<ManagedProcess>).value) as [
      ManagedProcess,
      ManagedProcess,
      ManagedProcess,
      ManagedProcess,
      ManagedProcess | undefined,
    ];
    const workerMetricsUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    const ingressMetricsUrl = `${ingress.readyMatch}/metrics`;

    const watched: Record<string, number> = { ingress: ingress.pid, worker: worker.pid, ceiling: ceiling.pid, load: load.pid };
    if (ingressAlone) watched['ingress alone'] = ingressAlone.pid;
    const temporalPid = devServer ? childPids(process.pid, 'temporal')[0] : undefined;
    if (temporalPid !== undefined) watched.temporal = temporalPid;
    const sampler = new MemorySampler();
    for (const [name, pid] of Object.entries(watched)) sampler.watch(name, pid);
    sampler.start();
    closers.push({ name: 'the memory sampler', close: async () => sampler.stop() });

    const runLoad = (phase: LoadPhase, generator: ManagedProcess = load): Promise<PhaseResult> =>
      new Promise((resolve, reject) => {
        const child = generator.child;
        const onMessage = (reply: LoadReply) => {
          finish();
          if (reply.type === 'result') resolve(reply.result);
          else reject(new Error(`load generator: ${reply.message}`));
        };
        const onExit = () => {
          finish();
          reject(new Error(`the load generator exited:\n${generator.tail()}`));
        };
        const onAbort = () => {
          finish();
          reject(signal!.reason as Error);
        };
        const finish = () => {
          child.off('message', onMessage);
          child.off('exit', onExit);
          signal?.removeEventListener('abort', onAbort);
        };
        child.on('message', onMessage);
        child.once('exit', onExit);
        signal?.addEventListener('abort', onAbort, { once: true });
        child.send({ type: 'run', phase } satisfies LoadMessage);
      });

    const cpuSnapshot = () => ({
      at: Date.now(),
      processes: Object.fromEntries(Object.entries(watched).map(([name, pid]) => [name, cpuSeconds(pid) ?? 0])),
      postgres: postgresCpuSeconds(),
      machine: machineCpu(),
    });
    const cpu: PhaseCpu[] = [];
    const measureCpu = async <T>(phase: string, work: () => Promise<T>): Promise<T> => {
      const before = cpuSnapshot();
      const result = await work();
      const after = cpuSnapshot();
      const wallS = (after.at - before.at) / 1000;
      const cpuS: Record<string, number> = {};
      for (const name of Object.keys(watched)) cpuS[name] = round((after.processes[name] ?? 0) - (before.processes[name] ?? 0), 1);
      cpuS.postgres = round(after.postgres - before.postgres, 1);
      const busy = after.machine.busy - before.machine.busy;
      const total = after.machine.total - before.machine.total;
      const ours = Object.values(cpuS).reduce((sum, seconds) => sum + seconds, 0);
      const machineBusyS = total > 0 ? (busy / total) * os.cpus().length * wallS : 0;
      cpu.push({
        phase,
        wallS: round(wallS, 1),
        cpuS,
        machineBusyCores: round(wallS > 0 ? machineBusyS / wallS : 0, 2),
        otherCores: round(wallS > 0 ? Math.max(0, machineBusyS - ours) / wallS : 0, 2),
      });
      return result;
    };

    const workload = (idPrefix: string, seed: number, extra: Partial<WorkloadOptions> = {}): WorkloadOptions => ({
      idPrefix,
      seed,
      albums: options.albums,
      redeliveryShare: options.redeliveryShare,
      pattern: 'stream',
      ...extra,
    });
    const loadPhase = (url: string, spec: Omit<LoadPhase, 'url' | 'workspace' | 'secret' | 'hardStopMs'>): LoadPhase => ({
      ...spec,
      url,
      workspace,
      secret,
      hardStopMs: spec.durationMs * 3 + 30_000,
    });

    /** Waits until the outbox is empty and every accepted child of the records is in a recorded decision. */
    const settle = async (records: readonly RequestRecord[]): Promise<string[]> => {
      const expected = acceptedChildren(records);
      const deadline = Date.now() + options.settleTimeoutMs;
      for (;;) {
        const { rows } = await pool.query<{ depth: number }>('SELECT count(*)::int AS depth FROM outbox');
        const missing = undecided(expected, await decisionsOf(pool, [...expected.keys()]));
        if ((rows[0]!.depth === 0 && missing.length === 0) || Date.now() > deadline) return missing;
        await sleep(200, signal);
      }
    };

    const appPhases: AppPhase[] = [];
    const runAppPhase = async (name: string, phase: LoadPhase): Promise<{ records: RequestRecord[]; truncated: boolean }> => {
      signal?.throwIfAborted();
      log(`bench: ${name} (app)`);
      const before = await scrape(ingressMetricsUrl, metricsToken);
      const result = await measureCpu(`${name}, app`, async () => {
        const loaded = await runLoad(phase);
        const missing = await settle(loaded.records);
        if (missing.length > 0) log(`bench: ${missing.length} accepted children of ${name} still undecided after ${options.settleTimeoutMs} ms`);
        return loaded;
      });
      const after = await scrape(ingressMetricsUrl, metricsToken);
      const children = result.records.filter((r) => r.status === 202 && r.duplicate === false).length;
      const signals = delta(after, before, 'albumflow_signals_sent_total');
      appPhases.push({
        name,
        records: result.records,
        cost: {
          phase: name,
          children,
          signalWithStarts: signals,
          signalsPerChild: children > 0 ? round(signals / children, 3) : null,
          childrenPerSignal: ratio(delta(after, before, 'albumflow_children_signalled_total'), signals),
          signalFailures: delta(after, before, 'albumflow_signal_failures_total'),
        },
      });
      return result;
    };
    const runCeilingPhase = async (name: string, phase: LoadPhase): Promise<PhaseResult> => {
      signal?.throwIfAborted();
      log(`bench: ${name} (ceiling)`);
      return measureCpu(`${name}, ceiling`, () => runLoad(phase));
    };

    /**
     * The ingress alone runs the same load right after the ceiling, under the same conditions (no
     * pipeline at work); every child it acknowledged must be in its database.
     */
    const ingressAloneChildren: RequestRecord[] = [];
    const runIngressAlonePhase = async (name: string, phase: LoadPhase): Promise<PhaseResult> => {
      signal?.throwIfAborted();
      log(`bench: ${name} (ingress alone)`);
      const result = await measureCpu(`${name}, ingress alone`, () => runLoad(phase));
      ingressAloneChildren.push(...result.records);
      return result;
    };

    const ingest: IngestStep[] = [];
    const compare = async (
      name: string,
      rate: number | null,
      concurrency: number,
      durationMs: number,
      spec: WorkloadOptions,
    ): Promise<IngestStep> => {
      const phaseAt = (url: string) => loadPhase(url, { workload: spec, rate, durationMs, concurrency });
      const ceilingResult = await runCeilingPhase(name, phaseAt(ceiling.readyMatch));
      const aloneResult = ingressAlone ? await runIngressAlonePhase(name, phaseAt(ingressAlone.readyMatch)) : undefined;
      const appResult = await runAppPhase(name, phaseAt(ingress.readyMatch));
      const ceilingStats = stepStats(ceilingResult.records, ceilingResult.truncated);
      const appStats = stepStats(appResult.records, appResult.truncated);
      const aloneStats = aloneResult ? stepStats(aloneResult.records, aloneResult.truncated) : undefined;
      return {
        rate,
        concurrency,
        ceiling: ceilingStats,
        app: appStats,
        throughputRatio: ratio(appStats.acceptedPerS, ceilingStats.acceptedPerS),
        p99Ratio: ratio(appStats.ackMs.p99, ceilingStats.ackMs.p99),
        ...(aloneStats
          ? {
              ingressAlone: {
                stats: aloneStats,
                throughputRatio: ratio(aloneStats.acceptedPerS, ceilingStats.acceptedPerS),
                p99Ratio: ratio(aloneStats.ackMs.p99, ceilingStats.ackMs.p99),
              },
            }
          : {}),
      };
    };

    if (options.warmupSeconds > 0) {
      await compare('warm-up', options.rates[0] ?? 50, options.concurrency, options.warmupSeconds * 1000, workload('w', options.seed));
    }
    if (runs('ingest')) {
      for (const [i, rate] of options.rates.entries()) {
        ingest.push(await compare(`ingest ${rate}/s`, rate, options.concurrency, options.stepSeconds * 1000, workload(`r${i}`, options.seed + 1 + i)));
      }
      ingest.push(
        await compare('ingest closed loop', null, options.closedLoopConcurrency, options.stepSeconds * 1000, workload('c', options.seed + 100)),
      );
    }

    const sustainedPhase = `sustained ${options.sustainedRate}/s`;
    if (runs('sustained')) await runAppPhase(
      sustainedPhase,
      loadPhase(ingress.readyMatch, {
        workload: workload('s', options.seed + 200),
        rate: options.sustainedRate,
        durationMs: options.sustainedSeconds * 1000,
        concurrency: options.concurrency,
      }),
    );

    const burstPhase = `bursts of 10 at ${options.burstAlbumsPerSecond} albums/s`;
    if (runs('burst')) await runAppPhase(
      burstPhase,
      loadPhase(ingress.readyMatch, {
        workload: workload('b', options.seed + 300, { pattern: 'burst', albums: { ...options.albums, minChildren: 10, maxChildren: 10 } }),
        rate: options.burstAlbumsPerSecond * 10,
        durationMs: options.burstSeconds * 1000,
        concurrency: options.concurrency,
      }),
    );

    const openAlbums = async () =>
      (await pool.query<{ open: number }>(`SELECT count(*)::int AS open FROM albums WHERE state <> 'closed'`)).rows[0]!.open;
    const missingAlbums = options.openAlbums - (await openAlbums());
    if (runs('scale') && missingAlbums > 0) {
      await runAppPhase(
        'scale top-up',
        loadPhase(ingress.readyMatch, {
          workload: workload('x', options.seed + 400, { albums: { minChildren: 1, maxChildren: 2, totalShare: options.albums.totalShare }, maxAlbums: missingAlbums }),
          rate: options.scaleRate,
          durationMs: 3_600_000,
          concurrency: options.concurrency,
        }),
      );
    }

    log('bench: reading memory with the albums open');
    sampler.openWindow('open');
    await sleep(3_000, signal);
    sampler.closeWindow('open');
    const workerMetrics = await scrape(workerMetricsUrl).catch(() => new Map<string, number>());
    let runningWorkflows: number | null = null;
    try {
      runningWorkflows = (await temporal.workflow.count(`TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`)).count;
    } catch (err) {
      log(`bench: could not count running workflows: ${(err as Error).message}`);
    }
    const processes: Record<string, ProcessMemory> = {};
    for (const [name, pid] of Object.entries(watched)) {
      const memory = readMemory(pid);
      processes[name] = {
        peakRssMB: megabytes(sampler.peak('run', name)),
        hwmMB: megabytes(memory?.hwm ?? null),
        rssAtTargetMB: megabytes(memory?.rss ?? null),
      };
    }
    const scale = {
      openAlbums: await openAlbums(),
      runningWorkflows,
      processes,
      workerCachedWorkflows: workerMetrics.get('temporal_sticky_cache_size') ?? null,
    };

    log('bench: checking correctness');
    const allRecords = appPhases.flatMap((phase) => phase.records);
    const expected = acceptedChildren(allRecords);
    const workflowIds = [...expected.keys()];
    const readyDeadline = Date.now() + options.settleTimeoutMs;
    let readyCounts: Array<{ workflow_id: string; n: number }>;
    for (;;) {
      readyCounts = (
        await pool.query<{ workflow_id: string; n: number }>(
          `SELECT workflow_id, count(*)::int AS n FROM notifications
            WHERE type = 'album.ready' AND workflow_id = ANY($1::text[]) GROUP BY workflow_id`,
          [workflowIds],
        )
      ).rows;
      if (readyCounts.length >= workflowIds.length || Date.now() > readyDeadline) break;
      await sleep(250, signal);
    }
    const decisions = await decisionsOf(pool, workflowIds);
    const missing = undecided(expected, decisions);
    const decisionsByTrigger: Record<string, number> = {};
    for (const rows of decisions.values()) for (const row of rows) decisionsByTrigger[row.trigger] = (decisionsByTrigger[row.trigger] ?? 0) + 1;
    const duplicateAlbumReady = readyCounts.filter((row) => row.n > 1).length;
    const aloneExpected = acceptedChildren(ingressAloneChildren);
    let ingressAloneCommits: Correctness['ingressAlone'] = null;
    if (aloneExpected.size > 0) {
      const alonePool = createPool(withDatabase(base, ingressAloneDatabase), { max: 1, applicationName: 'albumflow-bench' });
      try {
        ingressAloneCommits = {
          acceptedChildren: childCount(aloneExpected),
          notStored: (await uncommitted(alonePool, aloneExpected)).length,
        };
      } finally {
        await alonePool.end();
      }
    }
    const correctness: Correctness = {
      acceptedChildren: childCount(expected),
      missingFromDecisions: missing.length,
      missingExamples: missing.slice(0, 10),
      albums: workflowIds.length,
      duplicateAlbumReady,
      albumsWithoutReady: workflowIds.length - readyCounts.length,
      decisionsByTrigger,
      ingressAlone: ingressAloneCommits,
      ok: missing.length === 0 && duplicateAlbumReady === 0 && expected.size > 0 && (ingressAloneCommits?.notStored ?? 0) === 0,
    };

    const endToEndFigures = appPhases
      .filter((phase) => phase.name !== 'warm-up')
      .map((phase) => endToEnd(phase.name, phase.records, decisions, options.quietPeriodMs));

    const { rows: serverVersion } = await pool.query<{ server_version: string }>('SHOW server_version');
    const systemInfo = await connection.workflowService.getSystemInfo({});
    const versions: Record<string, string> = {
      albumflow: await measuredSource,
      node: process.version,
      PostgreSQL: serverVersion[0]!.server_version,
      'Temporal CLI': await temporalCliVersion().catch(() => 'unknown'),
      'Temporal server': systemInfo.serverVersion || 'unknown',
      '@temporalio/worker': packageVersion('@temporalio/worker'),
      fastify: packageVersion('fastify'),
      pg: packageVersion('pg'),
    };

    const appLogs: Record<string, number> = {};
    await ingress.stop();
    await worker.stop();
    countLogProblems(path.join(runDir, 'ingress.log'), appLogs);
    countLogProblems(path.join(runDir, 'worker.log'), appLogs);

    const cpuModel = os.cpus()[0]?.model ?? 'unknown CPU';
    const reportBody: Omit<BenchReport, 'targets'> = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpuModel,
        cores: os.cpus().length,
        memoryGB: round(os.totalmem() / 1e9, 1),
        os: `${os.type()} ${os.release()}`,
      },
      versions,
      configuration: {
        rates: options.rates,
        stepSeconds: options.stepSeconds,
        concurrency: options.concurrency,
        closedLoopConcurrency: options.closedLoopConcurrency,
        sustainedRate: options.sustainedRate,
        sustainedSeconds: options.sustainedSeconds,
        burstAlbumsPerSecond: options.burstAlbumsPerSecond,
        burstSeconds: options.burstSeconds,
        openAlbums: options.openAlbums,
        scaleRate: options.scaleRate,
        QUIET_PERIOD_MS: options.quietPeriodMs,
        MAX_WAIT_MS: options.maxWaitMs,
        LATE_WINDOW_MS: options.lateWindowMs,
        albums: options.albums,
        redeliveryShare: options.redeliveryShare,
        seed: options.seed,
        profile: options.profile,
      },
      ingest,
      endToEnd: endToEndFigures,
      sustainedPhase,
      temporalCost: appPhases.map((phase) => phase.cost),
      burstPhase,
      scale,
      correctness,
      cpu,
      appLogs,
    };
    const report: BenchReport = { ...reportBody, targets: evaluateTargets(reportBody, options.openAlbums) };
    const markdown = renderMarkdown(report);
    const jsonPath = path.join(runDir, 'report.json');
    fs.writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    if (options.benchmarksPath) {
      if (!fs.existsSync(options.benchmarksPath)) fs.writeFileSync(options.benchmarksPath, benchmarksHeader);
      fs.appendFileSync(options.benchmarksPath, `\n${markdown}`);
    }
    return { report, jsonPath, markdown };
  } finally {
    await cleanUp();
  }
}

function parseOptions(argv: string[]): Partial<BenchOptions> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tiny: { type: 'boolean' },
      phases: { type: 'string' },
      rates: { type: 'string' },
      'step-seconds': { type: 'string' },
      concurrency: { type: 'string' },
      'closed-loop-concurrency': { type: 'string' },
      'warmup-seconds': { type: 'string' },
      'sustained-rate': { type: 'string' },
      'sustained-seconds': { type: 'string' },
      'burst-albums-per-second': { type: 'string' },
      'burst-seconds': { type: 'string' },
      'open-albums': { type: 'string' },
      'scale-rate': { type: 'string' },
      'quiet-period-ms': { type: 'string' },
      seed: { type: 'string' },
      profile: { type: 'boolean' },
      'no-append': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'npm run bench -- [--tiny] [--phases ingest,sustained,burst,scale] [--rates 100,200,400] [--step-seconds 10]\n' +
        '  [--concurrency 64] [--closed-loop-concurrency 32] [--warmup-seconds 15] [--sustained-rate 215] [--sustained-seconds 20]\n' +
        '  [--burst-albums-per-second 20] [--burst-seconds 10] [--open-albums 5000] [--scale-rate 100] [--quiet-period-ms 1000]\n' +
        '  [--seed N] [--profile] [--no-append]\n' +
        'DATABASE_URL names the PostgreSQL server (a fresh database is created on it and dropped after);\n' +
        'TEMPORAL_ADDRESS, when set, is used instead of starting a dev server.\n',
    );
    process.exit(0);
  }
  const number = (value: string | undefined, name: string): number | undefined => {
    if (value === undefined) return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} must be a non-negative number`);
    return parsed;
  };
  const options: Partial<BenchOptions> = values.tiny ? { ...tinyOptions } : {};
  const set = <K extends keyof BenchOptions>(key: K, value: BenchOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  set(
    'phases',
    values.phases?.split(',').map((name) => {
      if (!(phaseNames as readonly string[]).includes(name)) throw new Error(`--phases takes ${phaseNames.join(', ')}`);
      return name as PhaseName;
    }),
  );
  set('rates', values.rates?.split(',').map((rate) => number(rate, 'rates')!));
  set('stepSeconds', number(values['step-seconds'], 'step-seconds'));
  set('concurrency', number(values.concurrency, 'concurrency'));
  set('closedLoopConcurrency', number(values['closed-loop-concurrency'], 'closed-loop-concurrency'));
  set('warmupSeconds', number(values['warmup-seconds'], 'warmup-seconds'));
  set('sustainedRate', number(values['sustained-rate'], 'sustained-rate'));
  set('sustainedSeconds', number(values['sustained-seconds'], 'sustained-seconds'));
  set('burstAlbumsPerSecond', number(values['burst-albums-per-second'], 'burst-albums-per-second'));
  set('burstSeconds', number(values['burst-seconds'], 'burst-seconds'));
  set('openAlbums', number(values['open-albums'], 'open-albums'));
  set('scaleRate', number(values['scale-rate'], 'scale-rate'));
  set('quietPeriodMs', number(values['quiet-period-ms'], 'quiet-period-ms'));
  set('seed', number(values.seed, 'seed'));
  set('profile', values.profile);
  if (values['no-append']) options.benchmarksPath = null;
  if (process.env.TEMPORAL_ADDRESS) options.temporalAddress = process.env.TEMPORAL_ADDRESS;
  return options;
}

async function main(): Promise<void> {
  const controller = new AbortController();
  let interrupted = 0;
  const interrupt = (signal: NodeJS.Signals) => {
    interrupted += 1;
    if (interrupted > 1) process.exit(130);
    process.stderr.write(`\nbench: ${signal}, stopping everything it started (again to exit at once)\n`);
    controller.abort(new Error(`interrupted by ${signal}`));
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  try {
    const { report, jsonPath, markdown } = await runBench({ ...parseOptions(process.argv.slice(2)), signal: controller.signal });
    process.stdout.write(`${markdown}\n`);
    process.stdout.write(`JSON: ${jsonPath}\n`);
    if (!report.correctness.ok) {
      process.stderr.write('bench: correctness failed (see the Correctness section)\n');
      process.exitCode = 1;
    }
  } catch (err) {
    process.stderr.write(`bench: ${controller.signal.aborted ? 'interrupted' : 'failed'}: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = controller.signal.aborted ? 130 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
