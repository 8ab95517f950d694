import { performance } from 'node:perf_hooks';
import type { SpanContext } from '@opentelemetry/api';
import type { IngestLimits } from '../common/config.js';
import type { Logger } from '../common/log.js';
import { ingestBatchSize } from '../common/metrics.js';
import { inSpan, sampledSpanContext, traceparentOf } from '../common/tracing.js';
import { storeEdit, type StoredEdit } from './edits.js';
import { storeDeliveries, type ChildDelivery, type Delivery, type EditDelivery, type EventRecord, type IngestResult } from './ingest.js';
import { isUnavailable, type Pool } from './pool.js';

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
  /** Deliveries gathered or being written. */
  readonly pending: number;
  /** Writes what is gathered at once, refuses new deliveries, and resolves when every batch has finished. */
  close(): Promise<void>;
}

/** The batcher holds `maxPending` deliveries already (or is closed); the caller should answer 503. */
export class IngestSaturatedError extends Error {
  override name = 'IngestSaturatedError';
}

interface Waiting {
  delivery: Delivery;
  gatheredAt: number;
  /** The request's span (tracing on and sampled): the batch's span links to it. */
  span: SpanContext | undefined;
  resolve: (result: IngestResult | null) => void;
  reject: (error: Error) => void;
}

type Outcome = { result: IngestResult | null } | { error: Error };

function settle(waiting: Waiting, outcome: Outcome): void {
  if ('error' in outcome) waiting.reject(outcome.error);
  else waiting.resolve(outcome.result);
}

/**
 * Gathers concurrent deliveries into batches of at most `batchMaxRows`, each written with one set-based
 * statement (its own transaction). When a batch fails for anything but an unreachable database, each of
 * its deliveries is written again in a transaction of its own, so one bad event fails only its request.
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

  function submit(delivery: Delivery): Promise<IngestResult | null> {
    const refused = refusal();
    if (refused) return Promise.reject(refused);
    const span = sampledSpanContext();
    const traced = span && 'child' in delivery ? { ...delivery, traceparent: traceparentOf(span) } : delivery;
    return new Promise((resolve, reject) => {
      gathered.push({ delivery: traced, gatheredAt: performance.now(), span, resolve, reject });
      startBatches();
    });
  }

  function startBatches(): void {
    clearTimeout(timer);
    timer = undefined;
    while (gathered.length > 0 && writing.size < concurrentBatches) {
      const waitMs = batchMaxWaitMs - (performance.now() - gathered[0]!.gatheredAt);
      if (gathered.length < batchMaxRows && waitMs > 0 && !closed) {
        timer = setTimeout(startBatches, waitMs);
        return;
      }
      const batch = gathered.splice(0, batchMaxRows);
      ingestBatchSize.observe(batch.length);
      writingDeliveries += batch.length;
      const written = traced(batch).then((outcomes) => {
        writing.delete(written);
        writingDeliveries -= batch.length;
        batch.forEach((waiting, i) => settle(waiting, outcomes[i]!));
        startBatches();
      });
      writing.add(written);
    }
  }

  /** The batch in a span of its own, linked to the span of each request it holds, when any of them is traced. */
  function traced(batch: Waiting[]): Promise<Outcome[]> {
    const links = batch.flatMap((waiting) => (waiting.span ? [{ context: waiting.span }] : []));
    if (links.length === 0) return write(batch);
    return inSpan('albumflow.ingest.batch', { root: true, links, attributes: { 'albumflow.batch.deliveries': batch.length } }, () =>
      write(batch),
    );
  }

  async function write(batch: Waiting[]): Promise<Outcome[]> {
    try {
      const deliveries = batch.map((waiting) => waiting.delivery);
      const { results, queued } = await storeDeliveries(pool, deliveries);
      if (queued > 0) onQueued();
      return results.map((result) => ({ result }));
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
          const stored = await storeDeliveries(pool, [waiting.delivery]);
          queued += stored.queued;
          return { result: stored.results[0]! };
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
      return (await submit(delivery))!;
    },
    async recordEvent(event) {
      await submit(event);
    },
    async storeEdit(edit) {
      const refused = refusal();
      if (refused) throw refused;
      writingDeliveries += 1;
      const span = sampledSpanContext();
      const written = storeEdit(pool, span ? { ...edit, traceparent: traceparentOf(span) } : edit);
      editing.add(written);
      try {
        const { result, queued } = await written;
        if (queued > 0) onQueued();
        return result;
      } finally {
        editing.delete(written);
        writingDeliveries -= 1;
      }
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
