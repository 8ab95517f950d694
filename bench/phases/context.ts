// What every phase runs with: the load generator driven over IPC, the CPU each process took over a phase,
// the workloads and load specs of the run, and the three servers a load is sent to (the app, with its
// wait for every accepted child to be decided; the ceiling; the ingress alone). Each phase module
// (ingest, sustained, burst, scale) is written with these.
import type { Serializable } from 'node:child_process';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { outboxStats } from '../../src/db/outbox.js';
import type { PhaseResult, RequestRecord } from '../../test/harness/load.js';
import type { LoadMessage, LoadPhase, LoadReply } from '../load.js';
import { delta, scrape } from '../metrics.js';
import { countPhase } from '../histories.js';
import type { PhaseCounts } from '../temporal-counts.js';
import type { BenchOptions, PhaseName } from '../options.js';
import { cpuSeconds, machineCpu, postgresCpuSeconds, type NodeProcess } from '../../test/harness/processes.js';
import { attachmentOutcomes, mediaSettledOf, recordedDecisions, type RecordedDecision } from '../../test/harness/rows.js';
import { acceptedChildren, newChildren, undecided } from '../records.js';
import { postgresActivity, postgresCounters, postgresCountersAfter } from '../postgres-activity.js';
import { ratio, round, type PhaseCpu, type TemporalCost } from '../report.js';
import type { Pool } from '../../src/db/pool.js';
import type { Stack, VariantApp } from '../stack.js';
import type { ServedMedia, WorkloadOptions } from '../workload.js';

export interface AppPhase {
  name: string;
  records: RequestRecord[];
  cost: TemporalCost;
  /** Its children's attachments had URLs on the media server. */
  media: boolean;
}

export interface AppPhaseOptions {
  /** Attachments with URLs: the phase also waits for every album's media to settle. */
  media: boolean;
  /** Count the Temporal histories of its workflows once it settled. */
  countHistories: boolean;
}

/** Sends a message to a process of the run over IPC and waits for its reply; rejects when it exits first, or on abort. */
export function ask<Reply>(target: NodeProcess, message: unknown, signal?: AbortSignal): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const child = target.child();
    const onMessage = (reply: Reply) => {
      finish();
      resolve(reply);
    };
    const onExit = () => {
      finish();
      reject(new Error(`${target.name} exited:\n${target.tail()}`));
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
    child.send(message as Serializable);
  });
}

export class PhaseContext {
  readonly cpu: PhaseCpu[] = [];
  readonly appPhases: AppPhase[] = [];
  readonly counts: PhaseCounts[] = [];
  /** Every request the ingress alone answered, for the correctness check of its database. */
  readonly ingressAloneChildren: RequestRecord[] = [];

  constructor(
    readonly options: BenchOptions,
    readonly stack: Stack,
  ) {}

  runs(phase: PhaseName): boolean {
    return this.options.phases.includes(phase);
  }

  /** The run's workload options for one phase. */
  workload(idPrefix: string, seed: number, extra: Partial<WorkloadOptions> = {}): WorkloadOptions {
    const { options } = this;
    return { idPrefix, seed, albums: options.albums, redeliveryShare: options.redeliveryShare, pattern: 'stream', ...extra };
  }

  /** The media server's files, for the workload of a phase that downloads; undefined with --no-media. */
  get media(): ServedMedia | undefined {
    return this.stack.media;
  }

  loadPhase(url: string, spec: Omit<LoadPhase, 'url' | 'workspace' | 'secret' | 'hardStopMs'>): LoadPhase {
    return { ...spec, url, workspace: this.stack.workspace, secret: this.stack.secret, hardStopMs: spec.durationMs * 3 + 30_000 };
  }

  /** Sends one phase to the load generator and waits for its records. */
  async runLoad(phase: LoadPhase): Promise<PhaseResult> {
    const reply = await ask<LoadReply>(this.stack.load, { type: 'run', phase } satisfies LoadMessage, this.options.signal);
    if (reply.type === 'result') return reply.result;
    throw new Error(`load generator: ${reply.message}`);
  }

  private cpuSnapshot() {
    const { watched } = this.stack;
    return {
      at: Date.now(),
      processes: Object.fromEntries(Object.entries(watched).map(([name, pid]) => [name, cpuSeconds(pid) ?? 0])),
      postgres: postgresCpuSeconds(),
      machine: machineCpu(),
    };
  }

  /**
   * Runs `work` and records the CPU seconds every watched process, PostgreSQL and the machine took
   * meanwhile, and what PostgreSQL did for the run's databases.
   */
  async measureCpu<T>(phase: string, work: () => Promise<T>): Promise<T> {
    const { pool, databasePrefix } = this.stack;
    const countersBefore = await postgresCounters(pool, databasePrefix);
    const before = this.cpuSnapshot();
    const result = await work();
    const after = this.cpuSnapshot();
    const countersAfter = await postgresCountersAfter(pool, databasePrefix);
    const wallS = (after.at - before.at) / 1000;
    const cpuS: Record<string, number> = {};
    for (const name of Object.keys(this.stack.watched)) cpuS[name] = round((after.processes[name] ?? 0) - (before.processes[name] ?? 0), 1);
    cpuS.postgres = round(after.postgres - before.postgres, 1);
    const busy = after.machine.busy - before.machine.busy;
    const total = after.machine.total - before.machine.total;
    const ours = Object.values(cpuS).reduce((sum, seconds) => sum + seconds, 0);
    const machineBusyS = total > 0 ? (busy / total) * os.cpus().length * wallS : 0;
    this.cpu.push({
      phase,
      wallS: round(wallS, 1),
      cpuS,
      machineBusyCores: round(wallS > 0 ? machineBusyS / wallS : 0, 2),
      otherCores: round(wallS > 0 ? Math.max(0, machineBusyS - ours) / wallS : 0, 2),
      postgres: postgresActivity(countersBefore, countersAfter),
    });
    return result;
  }

  /**
   * Waits until the outbox is empty and every accepted child of the records is in a recorded decision,
   * and with media until no attachment of theirs is pending and each album notified its latest
   * decision's `album.media_settled`. Answers what is still missing at the deadline.
   */
  private async settle(pool: Pool, records: readonly RequestRecord[], media: boolean): Promise<string[]> {
    const expected = acceptedChildren(records);
    const workflowIds = [...expected.keys()];
    const deadline = Date.now() + this.options.settleTimeoutMs;
    for (;;) {
      const { depth } = await outboxStats(pool);
      const decisions = await recordedDecisions(pool, workflowIds);
      const missing = undecided(expected, decisions);
      if (depth === 0 && missing.length === 0 && media) missing.push(...(await this.unsettledMedia(pool, workflowIds, decisions)));
      if ((depth === 0 && missing.length === 0) || Date.now() > deadline) return missing;
      await sleep(200, undefined, { signal: this.options.signal });
    }
  }

  private async unsettledMedia(pool: Pool, workflowIds: string[], decisions: Map<string, RecordedDecision[]>): Promise<string[]> {
    const pending = (await attachmentOutcomes(pool, workflowIds)).byStatus.pending ?? 0;
    if (pending > 0) return [`${pending} attachments pending`];
    const settled = await mediaSettledOf(pool, workflowIds);
    return workflowIds
      .filter((workflowId) => {
        const latest = decisions.get(workflowId)?.at(-1);
        return latest === undefined || !settled.get(workflowId)?.has(latest.seq);
      })
      .map((workflowId) => `${workflowId}: no album.media_settled`);
  }

  /** One phase against the whole app: the load, then the wait until it is decided; its CPU and dispatcher counters. */
  async runAppPhase(
    name: string,
    phase: LoadPhase,
    { media, countHistories }: AppPhaseOptions = { media: false, countHistories: false },
  ): Promise<PhaseResult> {
    this.options.signal?.throwIfAborted();
    this.options.log(`bench: ${name} (app)`);
    const before = await scrape(this.stack.ingressMetricsUrl, this.stack.metricsToken);
    const result = await this.measureCpu(`${name}, app`, async () => {
      const loaded = await this.runLoad(phase);
      this.reportUnsettled(name, await this.settle(this.stack.pool, loaded.records, media));
      return loaded;
    });
    const after = await scrape(this.stack.ingressMetricsUrl, this.stack.metricsToken);
    const children = newChildren(result.records);
    const signals = delta(after, before, 'albumflow_signals_sent_total');
    this.appPhases.push({
      name,
      records: result.records,
      media,
      cost: {
        phase: name,
        children,
        signalWithStarts: signals,
        signalsPerChild: children > 0 ? round(signals / children, 3) : null,
        childrenPerSignal: ratio(delta(after, before, 'albumflow_children_signalled_total'), signals),
        signalFailures: delta(after, before, 'albumflow_signal_failures_total'),
      },
    });
    if (countHistories) {
      this.options.log(`bench: ${name} (counting its workflows' histories)`);
      this.counts.push(await countPhase(this.stack.temporal, name, [...acceptedChildren(result.records).keys()], children));
    }
    return result;
  }

  private reportUnsettled(name: string, missing: string[]): void {
    if (missing.length > 0)
      this.options.log(`bench: ${name} not settled after ${this.options.settleTimeoutMs} ms (${missing.length} left, e.g. ${missing[0]})`);
  }

  /**
   * The same load against a second app in the cost baseline's configuration (started for the phase,
   * stopped after it); only its Temporal counts are reported, beside those of the default configuration.
   */
  async runBaselinePhase(name: string, phase: Omit<LoadPhase, 'url'>, media: boolean): Promise<void> {
    this.options.signal?.throwIfAborted();
    this.options.log(`bench: ${name} (starting the app in the cost baseline's configuration)`);
    const app = await this.stack.startVariant('baseline', {
      scripts: { ingress: 'bench/baseline/ingress.ts', worker: 'bench/baseline/worker.ts' },
    });
    try {
      const { records } = await this.runLoad({ ...phase, url: app.url });
      this.reportUnsettled(name, await this.settle(app.pool, records, media));
      this.options.log(`bench: ${name} (counting its workflows' histories)`);
      this.counts.push(await countPhase(this.stack.temporal, name, [...acceptedChildren(records).keys()], newChildren(records)));
    } finally {
      await app.stop();
    }
  }

  /**
   * One phase against a second app of the run (stack.startVariant): the load, then the wait until it is
   * decided (with media, until its downloads settled too), with the CPU every process took (the variant's as `<name> ingress` and `<name> worker`).
   */
  async runVariantPhase(
    name: string,
    app: VariantApp,
    phase: LoadPhase,
    { media }: { media: boolean } = { media: false },
  ): Promise<PhaseResult> {
    this.options.signal?.throwIfAborted();
    this.options.log(`bench: ${name} (${app.name})`);
    return this.measureCpu(`${name}, ${app.name}`, async () => {
      const loaded = await this.runLoad({ ...phase, url: app.url });
      this.reportUnsettled(name, await this.settle(app.pool, loaded.records, media));
      return loaded;
    });
  }

  async runCeilingPhase(name: string, phase: LoadPhase): Promise<PhaseResult> {
    this.options.signal?.throwIfAborted();
    this.options.log(`bench: ${name} (ceiling)`);
    return this.measureCpu(`${name}, ceiling`, () => this.runLoad(phase));
  }

  /**
   * The ingress alone runs the same load right after the ceiling, under the same conditions (no
   * pipeline at work); every child it acknowledged must be in its database.
   */
  async runIngressAlonePhase(name: string, phase: LoadPhase): Promise<PhaseResult> {
    this.options.signal?.throwIfAborted();
    this.options.log(`bench: ${name} (ingress alone)`);
    const result = await this.measureCpu(`${name}, ingress alone`, () => this.runLoad(phase));
    this.ingressAloneChildren.push(...result.records);
    return result;
  }
}
