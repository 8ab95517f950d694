import { performance } from 'node:perf_hooks';
import type { SpanContext } from '@opentelemetry/api';
import type { IngestLimits } from '../common/config.js';
import type { Logger } from '../common/log.js';
import { ingestBatchSize } from '../common/metrics.js';
import { inSpan, sampledSpanContext, traceparentOf } from '../common/tracing.js';
import { storeEdit, type StoredEdit } from './edits.js';
import { storeDeliveries, type ChildDelivery, type Delivery, type EditDelivery, type EventRecord, type IngestResult } from './ingest.js';
import { isUnavailable, type Pool } from './pool.js';
import { storeWithdrawals, type StoredWithdrawals, type Withdrawal } from './withdrawals.js';

export interface IngestBatcherOptions extends IngestLimits {
  pool: Pool;
  /** Called once after each commit that queued children in the outbox. */
  onQueued: () => void;
  logger: Pick<Logger, 'warn'>;
}

/** Group commit for the ingress: each promise resolves only after the transaction holding its rows committed. */
export interface IngestBatcher {
  storeChild(delivery: ChildDelivery): Promise<IngestResult>;
  recordEvent(event: EventRecord): Promise<void>;
  /**
   * Edits are rare and must read the child they change under a lock: each is written at once in a
   * transaction of its own (src/db/edits.ts), under the same limits as the batches.
   */
  storeEdit(edit: EditDelivery): Promise<StoredEdit>;
  /**
   * The deliveries of one request that carries several (LINE's `events[]`), committed together: in one
   * batch of the group commit, never split across two; with withdrawals (rare, and they read the
   * children they mark) in a transaction of their own, as edits are. Results in delivery order.
   */
  storeTogether(deliveries: readonly Delivery[], withdrawals?: readonly Withdrawal[]): Promise<StoredWithdrawals['results']>;
  /** Deliveries gathered or being written. */
  readonly pending: number;
  /** Writes what is gathered at once, refuses new deliveries, and resolves when every batch has finished. */
  close(): Promise<void>;
}

/** The batcher holds `maxPending` deliveries already (or is closed); the caller should answer 503. */
export class IngestSaturatedError extends Error {
  override name = 'IngestSaturatedError';
}

/** The deliveries of one request, committed in the same transaction. */
interface Waiting {
  deliveries: readonly Delivery[];
  gatheredAt: number;
  /** The request's span (tracing on and sampled): the batch's span links to it. */
  span: SpanContext | undefined;
  resolve: (results: Array<IngestResult | null>) => void;
  reject: (error: Error) => void;
}

type Outcome = { result: Array<IngestResult | null> } | { error: Error };

function settle(waiting: Waiting, outcome: Outcome): void {
  if ('error' in outcome) waiting.reject(outcome.error);
  else waiting.resolve(outcome.result);
}

/** The requests at the head of `gathered` whose deliveries fit in `maxRows` (at least one request, however many it has). */
function batchLength(gathered: readonly Waiting[], maxRows: number): number {
  let rows = 0;
  let length = 0;
  for (const waiting of gathered) {
    if (length > 0 && rows + waiting.deliveries.length > maxRows) break;
    rows += waiting.deliveries.length;
    length += 1;
  }
  return length;
}

/** The children among `deliveries` carry the request's trace context, which their outbox and message rows keep. */
function withTraceparent(deliveries: readonly Delivery[], span: SpanContext | undefined): readonly Delivery[] {
  if (!span) return deliveries;
  const traceparent = traceparentOf(span);
  return deliveries.map((delivery) => ('child' in delivery ? { ...delivery, traceparent } : delivery));
}

const rowsOf = (waiting: readonly Waiting[]) => waiting.reduce((sum, w) => sum + w.deliveries.length, 0);

/**
 * Gathers concurrent requests' deliveries into batches of at most `batchMaxRows` (a request with more
 * is a batch of its own), each written with one set-based statement (its own transaction). When a batch
 * fails for anything but an unreachable database, each of its requests is written again in a
 * transaction of its own, so one bad event fails only its request.
 */
export function createIngestBatcher(options: IngestBatcherOptions): IngestBatcher {
  const { pool, batchMaxRows, batchMaxWaitMs, maxPending, concurrentBatches, onQueued, logger } = options;
  const gathered: Waiting[] = [];
  const writing = new Set<Promise<void>>();
  const editing = new Set<Promise<unknown>>();
  let writingDeliveries = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  function refusal(): IngestSaturatedError | null {
    if (closed) return new IngestSaturatedError('the ingress is shutting down');
    if (gathered.length + writingDeliveries >= maxPending)
      return new IngestSaturatedError(`${maxPending} deliveries are already waiting for the database`);
    return null;
  }

  function submit(deliveries: readonly Delivery[]): Promise<Array<IngestResult | null>> {
    const refused = refusal();
    if (refused) return Promise.reject(refused);
    const span = sampledSpanContext();
    return new Promise((resolve, reject) => {
      gathered.push({ deliveries: withTraceparent(deliveries, span), gatheredAt: performance.now(), span, resolve, reject });
      startBatches();
    });
  }

  /** Writes at once in a transaction of its own, under the same limits as the batches. */
  async function writeAlone<T extends { queued: number }>(write: () => Promise<T>): Promise<T> {
    const refused = refusal();
    if (refused) throw refused;
    writingDeliveries += 1;
    const written = write();
    editing.add(written);
    try {
      const stored = await written;
      if (stored.queued > 0) onQueued();
      return stored;
    } finally {
      editing.delete(written);
      writingDeliveries -= 1;
    }
  }

  function startBatches(): void {
    clearTimeout(timer);
    timer = undefined;
    while (gathered.length > 0 && writing.size < concurrentBatches) {
      const waitMs = batchMaxWaitMs - (performance.now() - gathered[0]!.gatheredAt);
      if (rowsOf(gathered) < batchMaxRows && waitMs > 0 && !closed) {
        timer = setTimeout(startBatches, waitMs);
        return;
      }
      const batch = gathered.splice(0, batchLength(gathered, batchMaxRows));
      const rows = rowsOf(batch);
      ingestBatchSize.observe(rows);
      writingDeliveries += rows;
      const written = traced(batch, rows).then((outcomes) => {
        writing.delete(written);
        writingDeliveries -= rows;
        batch.forEach((waiting, i) => settle(waiting, outcomes[i]!));
        startBatches();
      });
      writing.add(written);
    }
  }

  /** The batch in a span of its own, linked to the span of each request it holds, when any of them is traced. */
  function traced(batch: Waiting[], rows: number): Promise<Outcome[]> {
    const links = batch.flatMap((waiting) => (waiting.span ? [{ context: waiting.span }] : []));
    if (links.length === 0) return write(batch);
    return inSpan('albumflow.ingest.batch', { root: true, links, attributes: { 'albumflow.batch.deliveries': rows } }, () => write(batch));
  }

  async function write(batch: Waiting[]): Promise<Outcome[]> {
    try {
      const { results, queued } = await storeDeliveries(
        pool,
        batch.flatMap((waiting) => waiting.deliveries),
      );
      if (queued > 0) onQueued();
      let next = 0;
      return batch.map((waiting) => {
        const own = results.slice(next, next + waiting.deliveries.length);
        next += waiting.deliveries.length;
        return { result: own };
      });
    } catch (error) {
      if (batch.length === 1 || isUnavailable(error)) return batch.map(() => ({ error: error as Error }));
      const code = (error as { code?: unknown }).code;
      logger.warn({ code, deliveries: batch.length }, 'ingest batch failed; writing each delivery in a transaction of its own');
      return writeEachAlone(batch);
    }
  }

  async function writeEachAlone(batch: Waiting[]): Promise<Outcome[]> {
    let queued = 0;
    const outcomes = await Promise.all(
      batch.map(async (waiting): Promise<Outcome> => {
        try {
          const stored = await storeDeliveries(pool, waiting.deliveries);
          queued += stored.queued;
          return { result: stored.results };
        } catch (error) {
          return { error: error as Error };
        }
      }),
    );
    if (queued > 0) onQueued();
    return outcomes;
  }

  return {
    async storeChild(delivery) {
      return (await submit([delivery]))[0]!;
    },
    async recordEvent(event) {
      await submit([event]);
    },
    async storeEdit(edit) {
      const span = sampledSpanContext();
      return (await writeAlone(() => storeEdit(pool, span ? { ...edit, traceparent: traceparentOf(span) } : edit))).result;
    },
    async storeTogether(deliveries, withdrawals = []) {
      if (withdrawals.length === 0) return deliveries.length === 0 ? [] : submit(deliveries);
      const span = sampledSpanContext();
      const traceparent = span ? traceparentOf(span) : undefined;
      const tracedWithdrawals = traceparent ? withdrawals.map((withdrawal) => ({ ...withdrawal, traceparent })) : withdrawals;
      return (await writeAlone(() => storeWithdrawals(pool, withTraceparent(deliveries, span), tracedWithdrawals))).results;
    },
    get pending() {
      return gathered.length + writingDeliveries;
    },
    async close() {
      closed = true;
      startBatches();
      while (writing.size > 0 || editing.size > 0) await Promise.allSettled([...writing, ...editing]);
    },
  };
}
