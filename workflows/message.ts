import { condition, setHandler, workflowInfo } from '@temporalio/workflow';
import { initialAttachments, settleAttachment } from './album-rules.js';
import type { ChildRecord, DecisionView } from '../src/domain/types.js';
import { buildMessageView, childWithOutcomesOf, type MessageWorkflowStatus } from '../src/domain/album-view.js';
import { loadPrior, notify, recordDecision } from './activities.js';
import { messageStatusQuery } from './definitions.js';
import { ChildrenInbox } from './children-inbox.js';
import { defaultWorkflowOptions, Downloads, type WorkflowOptions } from './downloads.js';
import { TemporalUi } from './temporal-ui.js';
import type { MessageWorkflowInput } from './types.js';

/**
 * One standalone (album-less) message: records its `standalone` decision, downloads its attachments,
 * and once they are all terminal notifies `message.ready` with them. A run started by a redelivery
 * finds the decision in PostgreSQL and takes none again.
 */
export const messageWorkflow = messageWorkflowWith(defaultWorkflowOptions);

/** The message workflow run with these options (the bench registers its cost baseline's this way). */
export function messageWorkflowWith(options: WorkflowOptions): (input: MessageWorkflowInput) => Promise<MessageWorkflowStatus> {
  return (input) => runMessage(input, options);
}

async function runMessage(input: MessageWorkflowInput, options: WorkflowOptions): Promise<MessageWorkflowStatus> {
  const { workflowId } = workflowInfo();
  const { key } = input;
  const inbox = new ChildrenInbox();
  const downloads = new Downloads(options.attachmentsPerActivity);
  const ui = new TemporalUi();
  let child: ChildRecord | null = null;
  let decisions: DecisionView[] = [];
  let closed = false;

  const status = () => buildMessageView({ workflowId, key, child: child && childWithOutcomesOf(child), decisions, closed });
  setHandler(messageStatusQuery, status);
  const refresh = () => {
    const current = status();
    const { media } = current;
    ui.show({
      workspace: key.workspace,
      provider: key.provider,
      state: current.state,
      needsReview: false,
      children: current.message ? 1 : 0,
      decisions: decisions.length,
      details: `**${current.state}** · standalone message · media ${media.downloaded}/${media.total} downloaded, ${media.pending} pending`,
    });
  };

  const prior = await loadPrior({ kind: 'message', key });
  decisions = prior.decisions;
  child = prior.children.find((stored) => stored.arrival.messageId === key.messageId) ?? null;
  while (!child) {
    await condition(() => inbox.pending);
    const arrival = inbox.take().find((candidate) => candidate.messageId === key.messageId);
    if (arrival) child = { arrival, attachments: initialAttachments(arrival) };
  }
  refresh();

  const requests = child.attachments
    .filter((attachment) => attachment.status === 'pending')
    .map(({ position }) => ({ key, position, retry: false }));
  downloads.start(requests, ({ position }, result) => {
    if (child) child = { ...child, attachments: settleAttachment(child.attachments, position, result) };
    refresh();
  });

  let decision = decisions[0];
  if (!decision) {
    decision = { seq: 1, trigger: 'standalone', childMessageIds: [key.messageId], decidedAt: new Date(Date.now()).toISOString() };
    decisions = [decision];
    refresh();
    await recordDecision.executeWithOptions({ summary: 'record decision #1 (standalone)' }, [{ workflowId, decision, album: null }]);
  }

  await condition(() => downloads.inFlight === 0);
  await notify.executeWithOptions({ summary: `notify message.ready #${decision.seq}` }, [
    { workflowId, seq: decision.seq, type: 'message.ready', message: status(), decision },
  ]);
  closed = true;
  refresh();
  return status();
}
