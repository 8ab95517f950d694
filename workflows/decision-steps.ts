// What the album loop asks the record-and-notify activity to do for the commands of the album rules
// other than downloads, and the summary the Temporal UI shows for that activity. Pure.

import type { DecisionStep } from './activity-types.js';
import type { AlbumCommand } from './album-rules.js';

/** A command the loop carries out in order, one record-and-notify activity at a time (downloads run beside them). */
export type SequentialCommand = Exclude<AlbumCommand, { type: 'download' }>;

/** What recording and notifying one command of the rules means. */
export function decisionStepOf(command: SequentialCommand): DecisionStep {
  const { decision } = command;
  if (command.type === 'media_settled') return { type: 'album.media_settled', decision, notice: command.notice };
  if (command.type === 'edited') return { type: 'album.updated', decision, edit: command.edit };
  if (command.type === 'unsent') return { type: 'album.updated', decision, unsent: command.unsent };
  const record = { reviewReasons: command.reviewReasons, reviewResolved: command.reviewResolved };
  return command.late
    ? {
        type: 'album.updated',
        decision: { ...decision, lateChildMessageIds: command.late.childMessageIds, lateItemPolicy: command.late.policy },
        record,
      }
    : { type: 'album.ready', decision, record };
}

/** The activity's summary in the Temporal UI: each step's record and notification, in order. */
export function decisionStepsSummary(steps: readonly DecisionStep[]): string {
  return steps
    .map(
      ({ type, decision, record, edit, unsent }) =>
        `${record ? `record #${decision.seq} (${decision.trigger}), ` : ''}notify ${type} #${decision.seq}${edit ? ` (edit ${edit.version} of ${edit.messageId})` : ''}${unsent ? ` (${unsent.messageId} ${unsent.change ?? 'unsent'})` : ''}`,
    )
    .join(', ');
}
