import type { Pool } from '../../src/db/pool.js';
import type { FakeBotApi } from '../harness/servers/fake-bot-api.js';
import { childKeyString } from '../../src/domain/keys.js';
import type { LoadGenerator, SentChild } from '../harness/load.js';
import type { Fetch } from '../harness/servers/media.js';
import type { ProcessStack } from '../harness/stack.js';
import * as stored from '../harness/rows.js';

export interface Violation {
  /** The phase the child was first acknowledged in; `final` for whole-run checks. */
  phase: string;
  message: string;
}

export interface CheckReport {
  violations: Violation[];
  /** Children acknowledged with a 202 that passed every check. */
  checked: Set<string>;
  albums: number;
  decisions: number;
  downloads: number;
  /** Fetches that ended before the whole body was sent (a worker killed mid-download). */
  interruptedFetches: number;
  /** Notifications the receiver got more than once under the same id (at-least-once delivery). */
  notificationRedeliveries: number;
}

/** A child as the checks read it back from PostgreSQL. */
interface CheckedChild {
  messageId: string;
  albumWorkflowId: string | null;
  caption: string | null;
  /** Earlier versions kept by edits. */
  versions: number;
}

async function storedMessages(pool: Pool, workspace: string): Promise<Map<string, CheckedChild>> {
  const rows = await stored.messages.read(pool, { workspace }, [
    'workspace',
    'provider',
    'account_id',
    'conversation_id',
    'message_id',
    'album_workflow_id',
    'caption',
    'versions',
  ]);
  return new Map(
    rows.map((row) => {
      const key = childKeyString({
        workspace: row.workspace,
        provider: row.provider,
        accountId: row.account_id,
        conversationId: row.conversation_id,
        messageId: row.message_id,
      });
      return [key, { messageId: row.message_id, albumWorkflowId: row.album_workflow_id, caption: row.caption, versions: row.versions }];
    }),
  );
}

function workflowIdOf(child: SentChild): string {
  return child.albumKey === null ? `message:${child.childKey}` : `album:${child.albumKey}`;
}

/** True once the run is quiet: outbox empty, nothing pending, every album closed, every acknowledged child decided. */
export async function isQuiet(pool: Pool, load: LoadGenerator): Promise<{ done: boolean; detail: string }> {
  const counts = await stored.pipelineBacklog(pool);
  const latest = await latestDecisions(pool);
  let undecided = 0;
  for (const child of load.children.values()) {
    if (child.acked && !latest.get(workflowIdOf(child))?.has(child.messageId)) undecided += 1;
  }
  let detail = `outbox ${counts.outbox}, pending downloads ${counts.pending}, open albums ${counts.open}, pending notifications ${counts.notifying}, undecided children ${undecided}`;
  if (counts.notifying > 0) {
    const { rows: pending } = await pool.query<{ id: string; attempts: number; age_s: number; error: string | null }>(
      `SELECT d.notification_id AS id, d.attempts, extract(epoch FROM now() - d.created_at)::int AS age_s,
              (SELECT a.error FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.id DESC LIMIT 1) AS error
         FROM deliveries d WHERE d.state = 'pending' ORDER BY d.id LIMIT 5`,
    );
    detail += `; pending: ${pending.map((n) => `${n.id} (${n.attempts} attempts, ${n.age_s} s old, last error ${n.error ?? 'none'})`).join('; ')}`;
  }
  return { done: counts.outbox + counts.pending + counts.open + counts.notifying + undecided === 0, detail };
}

/** The children of each workflow's latest decision. */
async function latestDecisions(pool: Pool): Promise<Map<string, Set<string>>> {
  const rows = await stored.decisions.read(pool, {}, ['workflow_id', 'child_message_ids']);
  return new Map(rows.map((row) => [row.workflow_id, new Set(row.child_message_ids)]));
}

/**
 * The invariants of the fault suite, checked once everything is quiet: every acknowledged child is stored
 * and in its album's latest decision; decisions are well formed; one `album.ready` per album; no attachment
 * fetched (or, for a Telegram file, asked of getFile) after it was marked downloaded; a Telegram edit's
 * caption stored, the earlier one in the history; outbox empty; no refusal of valid traffic but 503.
 */
export async function checkInvariants(input: {
  /** The stack's database, workspace, media server and NOTIFY_URL receiver. */
  stack: Pick<ProcessStack, 'pool' | 'workspace' | 'media' | 'receiver'>;
  load: LoadGenerator;
  /** The fake Bot API the Telegram traffic's files come from. */
  botApi?: FakeBotApi;
}): Promise<CheckReport> {
  const { load, botApi } = input;
  const { pool, workspace, media, receiver } = input.stack;
  const violations: Violation[] = [];
  const childFailures = new Map<string, string[]>();
  const fail = (child: SentChild, message: string) => {
    const list = childFailures.get(child.childKey) ?? [];
    list.push(message);
    childFailures.set(child.childKey, list);
    violations.push({ phase: child.ackedIn ?? 'unacknowledged', message: `${child.childKey}: ${message}` });
  };
  const global = (message: string) => violations.push({ phase: 'final', message });

  const storedByKey = await storedMessages(pool, workspace);
  const decisionRows = await stored.decisions.read(pool, {}, ['workflow_id', 'seq', 'trigger', 'child_message_ids']);
  const decisions = new Map<string, (typeof decisionRows)[number][]>();
  for (const row of decisionRows) decisions.set(row.workflow_id, [...(decisions.get(row.workflow_id) ?? []), row]);

  const attachmentRows = await stored.attachments.read(pool, { workspace, position: 0 }, [
    'workspace',
    'provider',
    'account_id',
    'conversation_id',
    'message_id',
    'url',
    'status',
    'updated_at',
  ]);
  const attachments = new Map(
    attachmentRows.map((row) => [
      childKeyString({
        workspace: row.workspace,
        provider: row.provider,
        accountId: row.account_id,
        conversationId: row.conversation_id,
        messageId: row.message_id,
      }),
      row,
    ]),
  );
  const fetchesByPath = new Map<string, Fetch[]>();
  for (const fetch of media.fetches) fetchesByPath.set(fetch.path, [...(fetchesByPath.get(fetch.path) ?? []), fetch]);
  const getFileTimes = new Map<string, number[]>();
  for (const request of botApi?.calls('getFile') ?? []) {
    const fileId = (JSON.parse(request.body) as { file_id?: string }).file_id ?? '';
    getFileTimes.set(fileId, [...(getFileTimes.get(fileId) ?? []), request.at]);
  }

  for (const child of load.children.values()) {
    if (child.refusedWith !== null) fail(child, `valid traffic refused with HTTP ${child.refusedWith}`);
    if (!child.acked) continue;
    const row = storedByKey.get(child.childKey);
    if (!row) {
      fail(child, 'acknowledged with 202 but not stored');
      continue;
    }
    const workflowId = workflowIdOf(child);
    if (child.albumKey !== null && row.albumWorkflowId !== workflowId) fail(child, `stored under album ${row.albumWorkflowId}`);
    const list = decisions.get(workflowId) ?? [];
    const latest = list[list.length - 1];
    if (!list.some((decision) => decision.child_message_ids.includes(child.messageId))) fail(child, 'in no decision');
    else if (!latest?.child_message_ids.includes(child.messageId)) fail(child, `missing from the latest decision #${latest?.seq}`);

    const attachment = attachments.get(child.childKey);
    const expectedStatus = child.attachmentPath === null && child.telegramFileId === null ? 'unavailable' : 'downloaded';
    if (!attachment) fail(child, 'attachment row missing');
    else if (attachment.status !== expectedStatus) fail(child, `attachment ${attachment.status}, not ${expectedStatus}`);
    else {
      const fetchedAt =
        child.attachmentPath !== null
          ? (fetchesByPath.get(child.attachmentPath) ?? []).map((f) => f.startedAt)
          : child.telegramFileId !== null
            ? (getFileTimes.get(child.telegramFileId) ?? [])
            : [];
      const refetched = fetchedAt.filter((at) => at > attachment.updated_at.getTime());
      if (refetched.length > 0) fail(child, `attachment fetched ${refetched.length} time(s) after it was marked downloaded`);
    }
    // An edit that overtook its message (the message retried through an outage) is stored as the child: no earlier version.
    if (child.editedCaption !== null && (row.caption !== child.editedCaption || row.versions > 1)) {
      fail(child, `edited to "${child.editedCaption}", stored as "${row.caption}" with ${row.versions} earlier version(s)`);
    }
  }

  const albumChildren = new Map<string, Set<string>>();
  for (const message of storedByKey.values()) {
    if (message.albumWorkflowId === null) continue;
    const set = albumChildren.get(message.albumWorkflowId) ?? new Set<string>();
    set.add(message.messageId);
    albumChildren.set(message.albumWorkflowId, set);
  }
  for (const [workflowId, list] of decisions) {
    const members = workflowId.startsWith('album:') ? albumChildren.get(workflowId) : undefined;
    let previous: Set<string> = new Set();
    list.forEach((decision, i) => {
      const where = `${workflowId} decision #${decision.seq}`;
      if (decision.seq !== i + 1) global(`${where}: seq out of order (expected ${i + 1})`);
      const ids = new Set(decision.child_message_ids);
      if (ids.size !== decision.child_message_ids.length) global(`${where}: a child listed twice`);
      if (members) {
        const phantom = [...ids].filter((id) => !members.has(id));
        if (phantom.length > 0) global(`${where}: children not stored for this album: ${phantom.join(', ')}`);
      }
      const dropped = [...previous].filter((id) => !ids.has(id));
      if (dropped.length > 0) global(`${where}: drops children of the previous decision: ${dropped.join(', ')}`);
      const telegram = workflowId.startsWith(`album:${encodeURIComponent(workspace)}:telegram:`);
      const expected = workflowId.startsWith('message:')
        ? ['standalone']
        : i > 0
          ? ['late_item']
          : telegram
            ? ['quiet_period', 'max_wait', 'album_full']
            : ['expected_count_reached', 'quiet_period', 'max_wait'];
      if (!expected.includes(decision.trigger)) global(`${where}: trigger ${decision.trigger}`);
      if (decision.trigger === 'album_full' && ids.size < 10) global(`${where}: album_full with ${ids.size} children`);
      previous = ids;
    });
  }

  const readyCount = await stored.albumReadyCounts(pool);
  const receivedIds = new Map<string, Set<string>>();
  const deliveriesById = new Map<string, number>();
  for (const delivery of receiver.deliveries()) {
    deliveriesById.set(delivery.id, (deliveriesById.get(delivery.id) ?? 0) + 1);
    if (delivery.type !== 'album.ready') continue;
    const ids = receivedIds.get(delivery.workflowId) ?? new Set<string>();
    ids.add(delivery.id);
    receivedIds.set(delivery.workflowId, ids);
  }
  for (const workflowId of decisions.keys()) {
    if (!workflowId.startsWith('album:')) continue;
    if (readyCount.get(workflowId) !== 1) global(`${workflowId}: ${readyCount.get(workflowId) ?? 0} album.ready notifications recorded`);
    if (receivedIds.get(workflowId)?.size !== 1)
      global(`${workflowId}: the receiver got ${receivedIds.get(workflowId)?.size ?? 0} distinct album.ready`);
  }
  if (receiver.badSignatures() > 0) global(`${receiver.badSignatures()} notifications with a bad signature`);

  const queued = await stored.outbox.count(pool, {});
  if (queued !== 0) global(`outbox holds ${queued} rows`);

  for (const attempt of load.attempts) {
    if (attempt.status >= 500 && attempt.status !== 503) {
      violations.push({ phase: attempt.phase, message: `${attempt.childKey}: HTTP ${attempt.status} (only 503 may answer an outage)` });
    }
    if (attempt.status === 202 && attempt.answeredKey !== attempt.childKey) {
      violations.push({ phase: attempt.phase, message: `${attempt.childKey}: 202 names ${attempt.answeredKey}` });
    }
  }

  const checked = new Set<string>();
  for (const child of load.children.values()) if (child.acked && !childFailures.has(child.childKey)) checked.add(child.childKey);
  return {
    violations,
    checked,
    albums: [...decisions.keys()].filter((id) => id.startsWith('album:')).length,
    decisions: decisionRows.length,
    downloads: attachmentRows.filter((row) => row.status === 'downloaded').length,
    interruptedFetches: media.fetches.filter((f) => f.completedAt === null).length,
    notificationRedeliveries: [...deliveriesById.values()].reduce((sum, n) => sum + n - 1, 0),
  };
}
