import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  rootCause,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  initialState,
  nextDeadline,
  pendingDownloads,
  restoreState,
  retryable,
  step,
  type AlbumEvent,
  type Transition,
} from './album-rules.js';
import { carriedRules, carriedState } from './album-carried.js';
import { albumUiView } from './album-summary.js';
import { albumStatusOf } from '../src/domain/album-view.js';
import { loadPrior, markClosed, recordAndNotify } from './activities.js';
import { ChildrenInbox } from './children-inbox.js';
import { DeadlineTimer } from './deadline-timer.js';
import { decisionStepOf, decisionStepsSummary, type SequentialCommand } from './decision-steps.js';
import { noteProblem, resolveReviewUpdate, retryDownloadsUpdate, statusQuery } from './definitions.js';
import { defaultWorkflowOptions, Downloads, type WorkflowOptions } from './downloads.js';
import { albumBody, fitsInPayload } from './payload.js';
import { TemporalUi } from './temporal-ui.js';
import type { AlbumView, DownloadRequest } from '../src/domain/types.js';
import type { AlbumWorkflowInput } from './types.js';

/**
 * One media album (docs/design.md, "The album workflow"): collects distinct children, downloads their
 * attachments at once, decides with the album rules, records each decision before notifying, amends the
 * album for late items until the late window ends, then marks it closed and returns its final status.
 */
export const albumWorkflow = albumWorkflowWith(defaultWorkflowOptions);

/** The album workflow run with these options (the bench registers its cost baseline's this way). */
export function albumWorkflowWith(options: WorkflowOptions): (input: AlbumWorkflowInput) => Promise<AlbumView | null> {
  return (input) => runAlbum(input, options);
}

async function runAlbum(input: AlbumWorkflowInput, options: WorkflowOptions): Promise<AlbumView | null> {
  const { workflowId } = workflowInfo();
  const { key, timings, profile } = input;
  const inbox = new ChildrenInbox();
  const downloads = new Downloads(options.attachmentsPerActivity);
  const timer = new DeadlineTimer();
  const ui = new TemporalUi();
  const commands: SequentialCommand[] = [];
  let state = initialState();
  let restored = false;

  const status = () => albumStatusOf(workflowId, key, profile, state);
  setHandler(statusQuery, status);

  const apply = (transition: Transition) => {
    state = transition.state;
    const requests: DownloadRequest[] = [];
    for (const command of transition.commands) {
      if (command.type === 'download')
        requests.push({ key: { ...key, messageId: command.messageId }, position: command.position, retry: command.retry });
      else commands.push(command);
    }
    downloads.start(requests, ({ key: { messageId }, position }, result) =>
      apply(step(state, { type: 'download_settled', messageId, position, result }, timings, profile)),
    );
    ui.show(albumUiView(key, state));
  };
  const handle = (event: AlbumEvent) => apply(step(state, event, timings, profile));

  setHandler(
    retryDownloadsUpdate,
    () => {
      const attachments = state.children.flatMap((child) =>
        child.attachments.filter(retryable).map((attachment) => ({ messageId: child.arrival.messageId, position: attachment.position })),
      );
      handle({ type: 'downloads_retried' });
      return { attachments };
    },
    {
      validator: () => {
        if (state.phase === 'closed') throw ApplicationFailure.nonRetryable('the album is closed', 'AlbumClosed');
      },
    },
  );
  setHandler(
    resolveReviewUpdate,
    async ({ note }) => {
      // A run started by this very update answers once it knows the album's stored state.
      await condition(() => restored);
      if (state.reviewReasons.length === 0) throw ApplicationFailure.nonRetryable('the album needs no review', 'NoReviewReasons');
      handle({ type: 'review_resolved', now: Date.now(), note });
      return state.reviewResolved!;
    },
    {
      // A note the album's records could not store would make every later record and markClosed fail.
      validator: (request: { note?: unknown } | undefined) => {
        const problem = noteProblem(request?.note);
        if (problem !== null) throw ApplicationFailure.nonRetryable(problem, 'InvalidNote');
      },
    },
  );

  /** Set when the carried state outgrew one payload: the run goes on (its history stays within Temporal's limits for an album as large as the fault suite's scale test). */
  let carriedTooLarge = false;
  const continueAsNewDue = () =>
    !carriedTooLarge &&
    (workflowInfo().continueAsNewSuggested ||
      (input.continueAsNewAfterSignals !== undefined && inbox.signals >= input.continueAsNewAfterSignals));
  const idle = () => !inbox.pending && commands.length === 0 && downloads.inFlight === 0;

  if (input.carried !== undefined) {
    const rules = carriedRules(input.carried);
    apply({ state: rules, commands: pendingDownloads(rules) });
  } else {
    const prior = await loadPrior({ kind: 'album', key });
    apply(restoreState(prior, Date.now(), timings, profile));
  }
  restored = true;

  for (;;) {
    if (inbox.pending) handle({ type: 'children_arrived', now: Date.now(), children: inbox.take() });
    const firedAt = timer.takeFired();
    if (firedAt !== null) handle({ type: 'timer_fired', now: Math.max(Date.now(), firedAt) });

    if (commands.length > 0) {
      const steps = commands.splice(0).map(decisionStepOf);
      try {
        await recordAndNotify.executeWithOptions({ summary: decisionStepsSummary(steps) }, [
          { workflowId, body: albumBody(status(), key), steps },
        ]);
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        log.error('recording or notifying a decision failed', { error: rootCause(err) });
      }
      continue;
    }
    if (idle() && state.phase === 'closed') {
      await condition(allHandlersFinished);
      await markClosed.executeWithOptions({ summary: 'mark the album closed' }, [
        { workflowId, reviewReasons: state.reviewReasons, reviewResolved: state.reviewResolved },
      ]);
      if (idle() && state.phase === 'closed') {
        const final = status();
        return fitsInPayload(final) ? final : null;
      }
      continue;
    }
    if (idle() && continueAsNewDue()) {
      await condition(allHandlersFinished);
      if (idle()) {
        const carried = carriedState(state);
        if (fitsInPayload(carried)) return continueAsNew<typeof albumWorkflow>({ ...input, carried });
        carriedTooLarge = true;
        log.warn('album state too large to continue as new; the run goes on', { children: state.children.length });
      }
      continue;
    }

    timer.arm(nextDeadline(state, timings));
    await condition(
      () =>
        timer.fired ||
        inbox.pending ||
        commands.length > 0 ||
        (downloads.inFlight === 0 && (state.phase === 'closed' || continueAsNewDue())),
    );
  }
}
