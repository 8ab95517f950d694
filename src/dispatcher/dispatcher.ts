import { isGrpcServiceError, ServiceError, type Client } from '@temporalio/client';
import { childrenSignal, workflowTypes } from '../../workflows/definitions.js';
import type { AlbumTimings } from '../domain/types.js';
import { listen, type Listener } from '../db/listen.js';
import { loadChildren } from '../db/children.js';
import {
  albumsThatMayComplete,
  claimAlbumRows,
  claimOutbox,
  deferOutboxRows,
  deleteOutboxRows,
  outboxChannel,
  outboxStats,
  recordOutboxFailure,
  type OutboxRow,
} from '../db/outbox.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { errorMessage } from '../common/error-message.js';
import type { Logger } from '../common/log.js';
import {
  childrenPerSignal,
  childrenSignalledTotal,
  outboxDepth,
  outboxOldestAgeSeconds,
  signalFailuresTotal,
  signalsSentTotal,
} from '../common/metrics.js';
import { annotate, inSpan, linksTo } from '../common/tracing.js';
import { startSearchAttributes } from '../temporal/workflow-start.js';
import { defaultSignalPlan, planSignals, rowsByWorkflow, type SignalBatch, type SignalPlan, type WorkflowRows } from './batches.js';
import { SignalThrottle } from './throttle.js';

export interface DispatcherOptions {
  pool: Pool;
  client: Client;
  taskQueue: string;
  timings: AlbumTimings;
  logger: Logger;
  /**
   * Outbox rows claimed per transaction. The rows Temporal accepted are deleted when it commits, after all
   * its signals: a large claim keeps rows locked, and progress invisible, until its last signal is
   * answered, and a loaded machine answers signals slowly.
   */
  batchSize?: number;
  /** Period of the sweep that catches what no notification announced. */
  sweepIntervalMs?: number;
  /** Cap of the backoff while Temporal (or PostgreSQL) is unreachable, and of a refused row's retry delay. */
  maxBackoffMs?: number;
  /** Deadline of one signalWithStart call, retries included. */
  signalTimeoutMs?: number;
  /** signalWithStart calls in flight at once. */
  concurrency?: number;
  /**
   * Shortest time between two signals from this dispatcher to one workflow, and how long an album's child
   * waits after its commit for the album's next ones; children committed meanwhile travel in one signal. A
   * burst into one album then costs a few large signals instead of one per commit (a workflow flooded with
   * signals has its workflow tasks failed by the server), and an album whose children arrive within the
   * interval costs one. Children that bring their album to its `total` are sent at once, with the album's
   * waiting ones. Default: a quarter of QUIET_PERIOD_MS, at most 500 ms, so the quiet period never ends
   * between two deliveries. 0: every child at once (the bench's cost baseline, and tests of other behaviour).
   */
  minSignalIntervalMs?: number;
  /** Children one signal carries at most (default maxChildrenPerSignal; the bench's cost baseline: 1). */
  maxChildrenPerSignal?: number;
}

/** Its functions do not depend on `this`: `wakeDispatcher: dispatcher.wake` is fine. */
export interface Dispatcher {
  /** Starts listening for commits and sweeping; runs a first pass at once. */
  start: () => void;
  /** Asks for a pass now (after a commit in this process); coalesced with the pass in flight. */
  wake: () => void;
  /** Finishes the pass in flight, then stops the timer and the listener. */
  stop: () => Promise<void>;
  /** Runs one pass (after the one in flight, if any) and resolves with the number of outbox rows delivered. */
  drainOnce: () => Promise<number>;
}

interface BatchOutcome {
  claimed: number;
  delivered: number;
  temporalUnavailable: boolean;
}

const grpcStatus = { DEADLINE_EXCEEDED: 4, RESOURCE_EXHAUSTED: 8, UNAVAILABLE: 14 } as const;
const unavailableCodes: ReadonlySet<number> = new Set(Object.values(grpcStatus));

/** The call failed because Temporal did not answer, not because it refused this workflow's signal. */
export function isTemporalUnavailable(err: unknown): boolean {
  const cause = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(cause) && unavailableCodes.has(cause.code);
}

/** A dispatcher's settings and its state between passes: what each of its functions below is given. */
interface DispatcherState {
  readonly pool: Pool;
  readonly client: Client;
  readonly taskQueue: string;
  readonly log: Logger;
  readonly batchSize: number;
  readonly sweepIntervalMs: number;
  readonly maxBackoffMs: number;
  readonly signalTimeoutMs: number;
  readonly concurrency: number;
  readonly throttle: SignalThrottle;
  readonly plan: SignalPlan;
  started: boolean;
  stopped: boolean;
  backoffMs: number;
  timer: NodeJS.Timeout | undefined;
  listener: Listener | undefined;
  inFlight: Promise<number> | undefined;
  queued: Promise<number> | undefined;
}

/**
 * Drains the outbox into Temporal: each pass locks due rows (SKIP LOCKED, so several processes share
 * the work), sends one signalWithStart per workflow with all its pending children, and deletes the rows
 * Temporal accepted, in the transaction that holds their locks.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { pool, client, taskQueue, timings } = options;
  const d: DispatcherState = {
    pool,
    client,
    taskQueue,
    log: options.logger.child({ component: 'dispatcher' }),
    batchSize: options.batchSize ?? 100,
    sweepIntervalMs: options.sweepIntervalMs ?? 1_000,
    maxBackoffMs: options.maxBackoffMs ?? 30_000,
    signalTimeoutMs: options.signalTimeoutMs ?? 10_000,
    concurrency: options.concurrency ?? 8,
    throttle: new SignalThrottle(options.minSignalIntervalMs ?? Math.min(500, Math.floor(timings.quietPeriodMs / 4))),
    plan: { ...defaultSignalPlan, timings, maxChildren: options.maxChildrenPerSignal ?? defaultSignalPlan.maxChildren },
    started: false,
    stopped: false,
    backoffMs: 0,
    timer: undefined,
    listener: undefined,
    inFlight: undefined,
    queued: undefined,
  };
  return { start: () => start(d), wake: () => wake(d), stop: () => stop(d), drainOnce: () => requestPass(d) };
}

function requestPass(d: DispatcherState): Promise<number> {
  if (d.queued) return d.queued;
  if (!d.inFlight) return startPass(d);
  d.queued = d.inFlight.then(() => {
    d.queued = undefined;
    return startPass(d);
  });
  return d.queued;
}

function startPass(d: DispatcherState): Promise<number> {
  if (d.stopped) return Promise.resolve(0);
  clearTimeout(d.timer);
  const pass = runPass(d).finally(() => {
    d.inFlight = undefined;
    armTimer(d);
  });
  d.inFlight = pass;
  return pass;
}

function armTimer(d: DispatcherState) {
  clearTimeout(d.timer);
  if (!d.started || d.stopped) return;
  d.timer = setTimeout(() => void requestPass(d), d.backoffMs || Math.min(d.sweepIntervalMs, d.throttle.msUntilHeldDue(Date.now())));
}

function backOff(d: DispatcherState) {
  d.backoffMs = d.backoffMs === 0 ? d.sweepIntervalMs : Math.min(d.maxBackoffMs, d.backoffMs * 2);
}

async function runPass(d: DispatcherState): Promise<number> {
  const { log } = d;
  let delivered = 0;
  d.throttle.passStarted(Date.now());
  try {
    for (;;) {
      const outcome = await drainBatch(d);
      delivered += outcome.delivered;
      if (outcome.temporalUnavailable) {
        backOff(d);
        log.warn({ retryInMs: d.backoffMs }, 'Temporal is unreachable; children stay in the outbox');
        break;
      }
      if (d.backoffMs > 0) log.info('outbox dispatch recovered');
      d.backoffMs = 0;
      if (outcome.claimed < d.batchSize || d.stopped) break;
    }
  } catch (err) {
    backOff(d);
    log.warn({ err, retryInMs: d.backoffMs }, 'outbox pass failed');
  }
  await refreshGauges(d);
  return delivered;
}

async function drainBatch(d: DispatcherState): Promise<BatchOutcome> {
  const { throttle, plan } = d;
  return withTransaction(d.pool, async (db) => {
    const claimed = await claimOutbox(db, d.batchSize);
    if (claimed.length === 0) return { claimed: 0, delivered: 0, temporalUnavailable: false };
    const outcome: BatchOutcome = { claimed: claimed.length, delivered: 0, temporalUnavailable: false };
    const now = Date.now();
    const children = await loadChildren(db, [...new Set(claimed.map((row) => row.messagePk))]);
    const workflows = rowsByWorkflow(claimed, children, plan);
    /**
     * When a workflow's rows may go: an interval after the last signal to it and, for an album, an
     * interval after its oldest child was committed, so the first children of an album wait for the next.
     */
    const dueAt = ({ target, albumPk, rows }: WorkflowRows) => {
      const signalled = throttle.nextSignalAt(target.workflowId);
      if (!albumPk) return signalled;
      return Math.max(signalled, now + throttle.minIntervalMs - Math.max(...rows.map((row) => row.ageMs)));
    };
    const waitingAlbums = new Map(
      workflows.flatMap((workflow) =>
        workflow.albumPk && workflow.target.workflowType === workflowTypes.album && dueAt(workflow) > now
          ? [[workflow.albumPk, workflow.target.input.profile.maxChildren] as const]
          : [],
      ),
    );
    // The child that completes an album is what its decision waits for: it is never held back. A signal
    // to an album carries every child of it still waiting (held back in earlier passes, due later).
    const completing = await albumsThatMayComplete(db, waitingAlbums);
    const goes = (workflow: WorkflowRows) => dueAt(workflow) <= now || (workflow.albumPk !== null && completing.has(workflow.albumPk));
    const cooling = workflows.filter((workflow) => !goes(workflow));
    if (cooling.length > 0) {
      const until = Math.min(...cooling.map(dueAt));
      await deferOutboxRows(
        db,
        cooling.flatMap(({ rows }) => rows.map((row) => row.id)),
        until - now,
      );
      throttle.held(until);
    }
    const going = workflows.filter(goes);
    const along = await claimAlbumRows(
      db,
      going.flatMap(({ albumPk }) => (albumPk ? [albumPk] : [])),
      claimed.map((row) => row.id),
    );
    const alongChildren = along.length > 0 ? await loadChildren(db, [...new Set(along.map((row) => row.messagePk))]) : [];
    const byCommit = (a: OutboxRow, b: OutboxRow) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);
    const due = planSignals([...going.flatMap(({ rows }) => rows), ...along].sort(byCommit), [...children, ...alongChildren], plan);
    const accepted: string[] = [];
    const refused: Array<{ batch: SignalBatch; err: unknown; unavailable: boolean }> = [];
    await forEachConcurrently(due, d.concurrency, async (batch) => {
      if (outcome.temporalUnavailable) return;
      const failure = await deliver(d, batch);
      if (!failure) {
        accepted.push(...batch.outboxIds);
        return;
      }
      const { err } = failure;
      const unavailable = isTemporalUnavailable(err);
      if (unavailable) outcome.temporalUnavailable = true;
      refused.push({ batch, err, unavailable });
    });
    // One client runs one statement at a time: the rows are settled after the signals, in this
    // transaction, which still holds their locks.
    if (accepted.length > 0) await deleteOutboxRows(db, accepted);
    for (const { batch, err, unavailable } of refused) {
      await recordOutboxFailure(db, batch.outboxIds, {
        error: errorMessage(err).slice(0, 2000),
        baseDelayMs: unavailable ? 0 : d.sweepIntervalMs,
        maxDelayMs: d.maxBackoffMs,
      });
    }
    outcome.delivered = accepted.length;
    return outcome;
  });
}

/** Signals one workflow; null when Temporal accepted, the failure otherwise. */
async function deliver(d: DispatcherState, batch: SignalBatch): Promise<{ err: unknown } | null> {
  try {
    await signal(d, batch);
  } catch (err) {
    signalFailuresTotal.inc();
    d.log.warn({ err, workflowId: batch.target.workflowId, children: batch.children.length }, 'signalWithStart failed');
    return { err };
  }
  d.throttle.signalled(batch.target.workflowId, Date.now());
  signalsSentTotal.inc();
  childrenSignalledTotal.inc(batch.children.length);
  childrenPerSignal.observe(batch.children.length);
  return null;
}

/**
 * One signalWithStart, in a span of its own linked to the request of each child it carries; the
 * Temporal client's interceptor carries the span on to the workflow.
 */
async function signal(
  { client, taskQueue, signalTimeoutMs }: DispatcherState,
  { target, scope, children, traceparents }: SignalBatch,
): Promise<void> {
  await inSpan('albumflow.signal', { root: true, links: linksTo(traceparents) }, async (span) => {
    annotate(span, { 'albumflow.workflow_type': target.workflowType, 'albumflow.signal.children': children.length });
    await client.withDeadline(Date.now() + signalTimeoutMs, () =>
      client.workflow.signalWithStart(target.workflowType, {
        workflowId: target.workflowId,
        taskQueue,
        args: [target.input],
        signal: childrenSignal,
        signalArgs: [{ children }],
        typedSearchAttributes: startSearchAttributes(scope),
      }),
    );
  });
}

async function refreshGauges(d: DispatcherState): Promise<void> {
  try {
    const stats = await outboxStats(d.pool);
    outboxDepth.set(stats.depth);
    outboxOldestAgeSeconds.set(stats.oldestAgeSeconds);
  } catch (err) {
    d.log.debug({ err }, 'could not read the outbox depth');
  }
}

function wake(d: DispatcherState) {
  if (!d.started || d.stopped || d.backoffMs > 0) return;
  void requestPass(d);
}

function start(d: DispatcherState) {
  if (d.started || d.stopped) return;
  d.started = true;
  d.listener = listen({
    config: d.pool.options,
    channel: outboxChannel,
    onNotification: () => wake(d),
    onConnectionLost: (err) => d.log.warn({ err }, 'outbox listener lost its connection; reconnecting'),
  });
  void requestPass(d);
}

async function stop(d: DispatcherState) {
  d.stopped = true;
  clearTimeout(d.timer);
  await d.listener?.close();
  await (d.queued ?? d.inFlight);
  clearTimeout(d.timer);
}

async function forEachConcurrently<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}
