// The pull feed for receivers that cannot take webhooks (docs/api.md, "The pull feed"): a workspace's notifications in the
// order their positions were assigned (commit order), each with its media links minted at the read, and a
// long poll that holds a read until an entry arrives.
import type { Logger } from '../common/log.js';
import { feedChannel, readFeed, type FeedEntry } from '../db/deliveries.js';
import { listen, type Listener } from '../db/listen.js';
import type { Pool } from '../db/pool.js';
import type { NotificationType } from '../domain/types.js';
import type { Materialize } from './materialize.js';
import { webhookId } from './wire.js';

/** The longest a read may wait for an entry. */
export const maxFeedWaitMs = 30_000;

export interface FeedEvent {
  /** Where the next read starts (`after`). */
  cursor: string;
  /** The notification's `webhook-id`: the same id its webhooks carry. */
  id: string;
  type: NotificationType;
  /** When it was recorded, ISO 8601. */
  timestamp: string;
  /** As a webhook's body carries it: its notification id first. */
  data: Record<string, unknown>;
}

export interface FeedPage {
  events: FeedEvent[];
  /** The cursor to read on from: the last event's, or `after` when there was none. */
  next: string;
}

export interface FeedQuery {
  /** A cursor of an earlier page; none: from the start. */
  after?: string;
  limit: number;
  types?: readonly NotificationType[];
  /** How long to wait for an entry when there is none yet (at most `maxFeedWaitMs`); 0: answer at once. */
  waitMs?: number;
  /** Ends a wait early (the client went away). */
  signal?: AbortSignal;
}

export class FeedCursorError extends Error {
  override name = 'FeedCursorError';
}

const cursorPattern = /^(0|[1-9]\d{0,17})$/;

export interface FeedReader {
  read(workspace: string, query: FeedQuery): Promise<FeedPage>;
  /** Ends the listening connection; reads waiting then answer at once. */
  close(): Promise<void>;
}

/**
 * Reads the feed for every request of a process, with one LISTEN connection between them: every appended
 * entry wakes the reads that wait, and each reads its workspace again.
 */
export function createFeedReader(options: { pool: Pool; materialize: Materialize; logger: Logger }): FeedReader {
  const { pool, materialize } = options;
  let arrivals = 0;
  const waiting = new Set<() => void>();
  let closed = false;

  function arrived() {
    arrivals += 1;
    for (const wake of waiting) wake();
  }

  const listener: Listener = listen({
    config: pool.options,
    channel: feedChannel,
    onNotification: arrived,
    onConnectionLost: (err) => options.logger.warn({ err }, 'feed listener lost its connection; reconnecting'),
  });

  /** Resolves once an entry arrived after the `seen`-th, `ms` passed, or the read was abandoned. */
  function arrivalAfter(seen: number, ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (arrivals > seen || closed || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiting.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  async function event(entry: FeedEntry, workspace: string): Promise<FeedEvent> {
    const data = await materialize(entry.data, { workspace, type: entry.type });
    return {
      cursor: entry.position,
      id: webhookId(entry.notificationId),
      type: entry.type,
      timestamp: entry.recordedAt.toISOString(),
      data: { id: entry.notificationId, ...data },
    };
  }

  async function read(workspace: string, query: FeedQuery): Promise<FeedPage> {
    const after = query.after ?? '0';
    if (!cursorPattern.test(after)) throw new FeedCursorError('after: not a cursor of this feed');
    const deadline = Date.now() + Math.min(Math.max(query.waitMs ?? 0, 0), maxFeedWaitMs);
    for (;;) {
      // Counted before the read: an entry committed between the read and the wait ends the wait.
      const seen = arrivals;
      const entries = await readFeed(pool, workspace, { after, limit: query.limit, ...(query.types ? { types: query.types } : {}) });
      const remaining = deadline - Date.now();
      if (entries.length > 0 || remaining <= 0 || closed || query.signal?.aborted) {
        const events = await Promise.all(entries.map((entry) => event(entry, workspace)));
        return { events, next: events.at(-1)?.cursor ?? after };
      }
      await arrivalAfter(seen, remaining, query.signal);
    }
  }

  return {
    read,
    async close() {
      closed = true;
      for (const wake of waiting) wake();
      await listener.close();
    },
  };
}
