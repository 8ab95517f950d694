// Workflow-side pieces the album and message workflows share: the children inbox, attachment
// downloads, decision records and notifications through activities, a deadline timer, and the
// search attributes and summary the Temporal UI shows.

import {
  ActivityFailure,
  CancellationScope,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { AnnounceInput } from '../activities/announce.js';
import type { createActivities } from '../activities/index.js';
import type { NotifyInput } from '../activities/publish.js';
import type { MarkClosedInput, RecordDecisionInput } from '../activities/record.js';
import type { Deadline } from './album-rules.js';
import { childrenSignal, searchAttributes } from './definitions.js';
import type { AlbumState, ChildArrival, DownloadResult, MessageKey } from './types.js';

type Activities = ReturnType<typeof createActivities>;

/** Download attempts per attachment; the last one records a transient failure as `failed`. */
export const downloadFinalAttempt = 5;

const { downloadAttachment } = proxyActivities<Activities>({
  startToCloseTimeout: '6 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: downloadFinalAttempt, initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

const effectOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const;

/**
 * Decision records and notifications are regular activities. A decision record must not be a local
 * activity: `loadPrior` (local) reads the decisions in PostgreSQL, and when a worker dies before the
 * first workflow task completes, the task is replayed without its markers, so `loadPrior` would run again,
 * find the decision its own lost attempt recorded, and the run would treat its children as already
 * decided and never send `album.ready` (the fault suite caught exactly that). A notification's receiver
 * may be down for hours; a pending activity shows its attempts and last failure in the Temporal UI.
 */
const { recordDecision, notify, markClosed: markClosedRemotely, announceDecisions } = proxyActivities<Activities>(effectOptions);

/**
 * The closing mark is a local activity since the `local-effects` patch (runs begun before keep the
 * regular one): it comes after the late window, never in the workflow task that ran `loadPrior`, and saves
 * the server a task queue round trip, three history events and a workflow task.
 */
const { markClosed: markClosedLocally } = proxyLocalActivities<Activities>(effectOptions);

export const { loadPrior } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

function isChildArrival(value: unknown): value is ChildArrival {
  const child = value as Partial<ChildArrival> | null;
  return typeof child === 'object' && child !== null && typeof child.messageId === 'string' && Array.isArray(child.attachments);
}

/** Collects the children of every `children` signal until the workflow takes them. */
export class ChildrenInbox {
  private buffered: ChildArrival[] = [];
  /** Signals received by this run. */
  signals = 0;

  constructor() {
    setHandler(childrenSignal, (batch) => {
      this.signals += 1;
      const children: unknown[] = Array.isArray(batch?.children) ? batch.children : [];
      const valid = children.filter(isChildArrival);
      if (valid.length < children.length) log.warn('ignored malformed children in a signal', { malformed: children.length - valid.length });
      this.buffered.push(...valid);
    });
  }

  get pending(): boolean {
    return this.buffered.length > 0;
  }

  take(): ChildArrival[] {
    const taken = this.buffered;
    this.buffered = [];
    return taken;
  }
}

function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Download activities started at once per workflow, at most; Temporal refuses a workflow task that would
 * leave more than 2,000 activities pending (a 10,000-photo album), so the rest wait for a free place.
 */
export const maxDownloadsInFlight = 100;

/** One download activity per attachment, started at once (or as soon as a place frees up); a download that fails for good counts as `failed`. */
export class Downloads {
  /** Downloads started or waiting, not settled yet. */
  inFlight = 0;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  start(key: MessageKey, position: number, onSettled: (result: DownloadResult) => void): void {
    this.inFlight += 1;
    const launch = () => {
      this.running += 1;
      void downloadAttachment
        .executeWithOptions({ summary: `download ${key.messageId} #${position}` }, [{ key, position, finalAttempt: downloadFinalAttempt }])
        .catch((err: unknown): DownloadResult => ({ status: 'failed', contentType: null, bytes: null, sha256: null, error: failureMessage(err) }))
        .then((result) => {
          this.running -= 1;
          this.inFlight -= 1;
          onSettled(result);
          this.waiting.shift()?.();
        });
    };
    if (this.running >= maxDownloadsInFlight && patched('bounded-downloads')) this.waiting.push(launch);
    else launch();
  }
}

export async function record(input: RecordDecisionInput): Promise<void> {
  const { decision } = input;
  await recordDecision.executeWithOptions({ summary: `record decision #${decision.seq} (${decision.trigger})` }, [input]);
}

/** Sends a notification; one the receiver refused for good is logged (and marked in PostgreSQL), never fatal. */
export async function publish(input: NotifyInput): Promise<void> {
  try {
    await notify.executeWithOptions({ summary: `notify ${input.type} #${input.seq}` }, [input]);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    log.warn('notification refused', { type: input.type, seq: input.seq, error: failureMessage(err) });
  }
}

/**
 * Records and notifies, in one activity, what an album decided in one step (since the patch
 * `one-activity-per-decision`; runs begun before record and notify with one activity each). A notification
 * the receiver refused for good is logged (and marked in PostgreSQL), never fatal.
 */
export async function announce(input: AnnounceInput): Promise<void> {
  const summary = input.announcements
    .map(({ type, decision, record }) => `${record ? `record #${decision.seq} (${decision.trigger}), ` : ''}notify ${type} #${decision.seq}`)
    .join(', ');
  try {
    const { refused } = await announceDecisions.executeWithOptions({ summary }, [input]);
    for (const { type, seq, error } of refused) log.warn('notification refused', { type, seq, error });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    log.error('decision announcement failed', { error: failureMessage(err) });
  }
}

export async function recordClosed(input: MarkClosedInput): Promise<void> {
  await (patched('local-effects') ? markClosedLocally : markClosedRemotely).executeWithOptions({ summary: 'mark the album closed' }, [input]);
}

const deadlineSummaries: Record<Deadline['kind'], string> = {
  quiet_period: 'quiet period',
  max_wait: 'maximum wait',
  late_item: 'late items debounce',
  late_window: 'late window',
};

/** At most one durable timer, for the current deadline; a timer whose deadline moved is cancelled. */
export class DeadlineTimer {
  private armed: { at: number; scope: CancellationScope; fired: boolean } | undefined;

  /** Keeps the running timer when the deadline is unchanged, replaces it otherwise. */
  arm(deadline: Deadline | null): void {
    if (this.armed && deadline && this.armed.at === deadline.at) return;
    this.disarm();
    if (!deadline) return;
    const armed = { at: deadline.at, scope: new CancellationScope(), fired: false };
    this.armed = armed;
    const summary = `${deadlineSummaries[deadline.kind]} ends ${new Date(deadline.at).toISOString()}`;
    void armed.scope.run(() => sleep(Math.max(1, deadline.at - Date.now()), { summary })).then(
      () => {
        armed.fired = true;
      },
      () => undefined,
    );
  }

  get fired(): boolean {
    return this.armed?.fired ?? false;
  }

  /** The deadline of a timer that fired, clearing it; null when none fired. */
  takeFired(): number | null {
    if (!this.armed?.fired) return null;
    const { at } = this.armed;
    this.armed = undefined;
    return at;
  }

  private disarm(): void {
    if (this.armed && !this.armed.fired) this.armed.scope.cancel();
    this.armed = undefined;
  }
}

export interface UiState {
  workspace: string;
  provider: string;
  state: AlbumState;
  needsReview: boolean;
  children: number;
  details: string;
}

/** Keeps the search attributes (upserted only when a value changed) and the current details current. */
export class UiPublisher {
  private shown: Partial<UiState> = {};

  update(next: UiState): void {
    const changes: SearchAttributeUpdatePair[] = [];
    if (next.workspace !== this.shown.workspace) changes.push({ key: searchAttributes.workspace, value: next.workspace });
    if (next.provider !== this.shown.provider) changes.push({ key: searchAttributes.provider, value: next.provider });
    if (next.state !== this.shown.state) changes.push({ key: searchAttributes.state, value: next.state });
    if (next.needsReview !== this.shown.needsReview) changes.push({ key: searchAttributes.needsReview, value: next.needsReview });
    if (next.children !== this.shown.children) changes.push({ key: searchAttributes.children, value: next.children });
    if (changes.length > 0) upsertSearchAttributes(changes);
    if (next.details !== this.shown.details) setCurrentDetails(next.details);
    this.shown = next;
  }
}
