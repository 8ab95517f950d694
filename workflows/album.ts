import { allHandlersFinished, condition, continueAsNew, log, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Announcement } from '../activities/announce.js';
import {
  agreedTotal,
  canonicalReasons,
  initialState,
  latestDecision,
  nextDeadline,
  pendingDownloads,
  restoreState,
  step,
  type AlbumCommand,
  type AlbumEvent,
  type AlbumRulesState,
  type Transition,
} from './album-rules.js';
import { buildAlbumView, mediaSummary, viewChildOf } from './album-view.js';
import { statusQuery } from './definitions.js';
import { announce, ChildrenInbox, DeadlineTimer, Downloads, loadPrior, publish, record, recordClosed, UiPublisher } from './effects.js';
import type { AlbumKey, AlbumState, AlbumStatus, AlbumWorkflowInput, DecisionView, JsonValue, MediaSummary, ReviewReason } from './types.js';

type SequentialCommand = Exclude<AlbumCommand, { type: 'download' }>;

/**
 * Largest JSON an album run hands to Temporal as one payload (Temporal refuses payloads over 2 MB; a
 * character may take three bytes). A status body over it is read from PostgreSQL by the notify activity.
 */
const payloadBudgetChars = 512 * 1024;

function fitsInPayload(value: unknown): boolean {
  return JSON.stringify(value).length <= payloadBudgetChars;
}

/** What an album run hands to the run it continues as. */
interface AlbumCarried {
  version: 1;
  rules: AlbumRulesState;
}

function carriedRules(carried: JsonValue): AlbumRulesState {
  const value = carried as unknown as Partial<AlbumCarried>;
  if (value.version !== 1 || !value.rules) throw new Error('albumWorkflow: carried state of an unknown version');
  return value.rules;
}

function albumStatus(workflowId: string, key: AlbumKey, state: AlbumRulesState): AlbumStatus {
  return buildAlbumView({
    workflowId,
    key,
    children: state.children.map(viewChildOf),
    decisions: state.decisions,
    reviewReasons: state.reviewReasons,
    closed: state.phase === 'closed',
  });
}

/** What the Temporal UI shows of an album: the status body's headline fields, without building its children. */
interface AlbumHeadline {
  state: AlbumState;
  distinctChildren: number;
  expectedTotal: number | null;
  reviewReasons: ReviewReason[];
  latest: DecisionView | undefined;
  media: MediaSummary;
}

/** Linear in the children, unlike the status body (sorted and copied): it runs after every transition. */
function headlineOf(state: AlbumRulesState): AlbumHeadline {
  return {
    state: state.phase === 'closed' ? 'closed' : state.decisions.length > 0 ? 'processed' : 'collecting',
    distinctChildren: state.children.length,
    expectedTotal: agreedTotal(state.children.map((child) => child.arrival)),
    reviewReasons: canonicalReasons(state.reviewReasons),
    latest: latestDecision(state),
    media: mediaSummary(state.children.flatMap((child) => child.attachments)),
  };
}

function summarize(headline: AlbumHeadline): string {
  const { media, latest, reviewReasons } = headline;
  const expected = headline.expectedTotal === null ? 'no usable total' : `expected ${headline.expectedTotal}`;
  return [
    `**${headline.state}** · ${headline.distinctChildren} children (${expected})`,
    latest ? `decision #${latest.seq} ${latest.trigger}` : 'no decision yet',
    `media ${media.downloaded}/${media.total} downloaded, ${media.pending} pending`,
    reviewReasons.length > 0 ? `review: ${reviewReasons.join(', ')}` : 'no review',
  ].join(' · ');
}

/**
 * One media album (DESIGN.md §4): collects distinct children, downloads their attachments at once,
 * decides with the album rules, records each decision before notifying, amends the album for late
 * items until the late window ends, then marks it closed and returns its final status.
 */
export async function albumWorkflow(input: AlbumWorkflowInput): Promise<AlbumStatus | null> {
  const { workflowId } = workflowInfo();
  const { key, timings } = input;
  const inbox = new ChildrenInbox();
  const downloads = new Downloads();
  const timer = new DeadlineTimer();
  const ui = new UiPublisher();
  const commands: SequentialCommand[] = [];
  let state = initialState();

  const status = () => albumStatus(workflowId, key, state);
  setHandler(statusQuery, status);
  const albumBody = (): { album: AlbumStatus } | { albumKey: AlbumKey } => {
    const body = status();
    return fitsInPayload(body) ? { album: body } : { albumKey: key };
  };

  const apply = (transition: Transition) => {
    state = transition.state;
    for (const command of transition.commands) {
      if (command.type === 'download') {
        const { messageId, position } = command;
        downloads.start({ ...key, messageId }, position, (result) =>
          apply(step(state, { type: 'download_settled', messageId, position, result }, timings)),
        );
      } else {
        commands.push(command);
      }
    }
    const current = headlineOf(state);
    ui.update({
      workspace: key.workspace,
      provider: key.provider,
      state: current.state,
      needsReview: current.reviewReasons.length > 0,
      children: current.distinctChildren,
      details: summarize(current),
    });
  };
  const handle = (event: AlbumEvent) => apply(step(state, event, timings));

  const announcementOf = (command: SequentialCommand): Announcement => {
    const { decision } = command;
    if (command.type === 'media_settled') return { type: 'album.media_settled', decision };
    const record = { reviewReasons: command.reviewReasons };
    return command.late
      ? {
          type: 'album.updated',
          decision: { ...decision, lateChildMessageIds: command.late.childMessageIds, lateItemPolicy: command.late.policy },
          record,
        }
      : { type: 'album.ready', decision, record };
  };

  /** Runs begun before the patch `one-activity-per-decision`: a record activity, then a notify activity, per command. */
  const executeOne = async (command: SequentialCommand) => {
    const { type, decision, record: recorded } = announcementOf(command);
    if (recorded) await record({ workflowId, decision: command.decision, album: recorded });
    await publish({ workflowId, seq: decision.seq, type, decision, ...albumBody() });
  };

  /** Set when the carried state outgrew one payload: the run goes on (its history stays within Temporal's limits up to ~10,000 children). */
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
    apply(restoreState(prior, Date.now(), timings));
  }

  for (;;) {
    if (inbox.pending) handle({ type: 'children_arrived', now: Date.now(), children: inbox.take() });
    const firedAt = timer.takeFired();
    if (firedAt !== null) handle({ type: 'timer_fired', now: Math.max(Date.now(), firedAt) });

    const [command] = commands;
    if (command) {
      if (patched('one-activity-per-decision')) {
        await announce({ workflowId, body: albumBody(), announcements: commands.splice(0).map(announcementOf) });
      } else {
        commands.shift();
        await executeOne(command);
      }
      continue;
    }
    if (idle() && state.phase === 'closed') {
      await recordClosed({ workflowId, reviewReasons: state.reviewReasons });
      if (idle() && state.phase === 'closed') {
        const final = status();
        return fitsInPayload(final) ? final : null;
      }
      continue;
    }
    if (idle() && continueAsNewDue()) {
      await condition(allHandlersFinished);
      if (idle()) {
        const carried: AlbumCarried = { version: 1, rules: state };
        if (fitsInPayload(carried)) return continueAsNew<typeof albumWorkflow>({ ...input, carried: carried as unknown as JsonValue });
        carriedTooLarge = true;
        log.warn('album state too large to continue as new; the run goes on', { children: state.children.length });
      }
      continue;
    }

    timer.arm(nextDeadline(state, timings));
    await condition(
      () => timer.fired || inbox.pending || commands.length > 0 || (downloads.inFlight === 0 && (state.phase === 'closed' || continueAsNewDue())),
    );
  }
}
