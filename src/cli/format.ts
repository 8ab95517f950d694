// The CLI's tables and summaries. Every value in them came from a server, and most from a sender: each cell
// and each line goes through terminalText, so none can act on the terminal or break a line.
import { byteSize } from '../domain/byte-size.js';
import { purgeCountLabels } from '../domain/lifetime.js';
import type { AlbumListBody, MessageStatus } from '../http/schemas.js';
import type { AlbumView, AttachmentView, DecisionView, EarlierVersion } from '../domain/types.js';
import { terminalLines, terminalText } from '../common/terminal.js';

export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}

function childrenLine(album: AlbumView): string {
  const { distinctChildren: have, expectedTotal: total } = album;
  if (total === null) return `${have} (no total known)`;
  if (have > total) return `${have}, more than the ${total} expected`;
  return `${have} of ${total} expected${have === total ? ' (reached)' : ''}`;
}

/** A table's lines; its cells are escaped before they are measured, so the columns line up as printed. */
export function table(header: string[], rows: string[][]): string[] {
  const cells = rows.map((row) => row.map(terminalText));
  const widths = header.map((title, column) => Math.max(title.length, ...cells.map((row) => (row[column] ?? '').length)));
  const line = (values: string[]) =>
    values
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
}

const text = (value: unknown): string =>
  value === null || value === undefined ? '-' : typeof value === 'string' ? value : JSON.stringify(value);

function attachmentsCell(attachments: AttachmentView[]): string {
  return attachments.map((a) => `#${a.position} ${a.status}${a.error ? ` (${a.error})` : ''}`).join(', ') || '-';
}

/** A caption as it is now, marked when edits replaced earlier ones, and when its sender unsent the message. */
function captionCell(caption: string | null, history: EarlierVersion[], withdrawnAt?: string): string {
  const edited = history.length === 0 ? text(caption) : `${text(caption)} (edited ${plural(history.length, 'time')})`;
  return withdrawnAt === undefined ? edited : `${edited} (unsent ${withdrawnAt})`;
}

function historyLines(history: EarlierVersion[]): string[] {
  return history.map(
    (version, i) =>
      `  version ${i + 1}:    ${text(version.caption)} (replaced ${version.replacedAt}${version.mediaReplaced ? ', with its media' : ''})`,
  );
}

function decisionsTable(decisions: DecisionView[]): string[] {
  if (decisions.length === 0) return ['Decisions: none yet'];
  return [
    'Decisions:',
    ...table(
      ['seq', 'trigger', 'decided at', 'children'],
      decisions.map((d) => [String(d.seq), d.trigger, d.decidedAt, d.childMessageIds.join(', ')]),
    ),
  ];
}

function reviewLine(review: AlbumView['review']): string {
  if (review.reasons.length === 0) return 'not required';
  const reasons = review.reasons.join(', ');
  return review.resolved
    ? `resolved at ${review.resolved.at}${review.resolved.note ? ` (${review.resolved.note})` : ''}: ${reasons}`
    : `required: ${reasons}`;
}

export function formatAlbum(album: AlbumView): string {
  const { key, media } = album;
  return terminalLines([
    `Album ${key.albumId}  (${key.provider} / account ${key.accountId} / conversation ${key.conversationId}, workspace ${key.workspace})`,
    `workflow id:    ${album.workflowId}`,
    `state:          ${album.state}`,
    `children:       ${childrenLine(album)}`,
    `review:         ${reviewLine(album.review)}`,
    `media:          ${media.downloaded}/${media.total} downloaded, ${media.pending} pending, ${media.failed} failed, ${media.expired} expired, ${media.unavailable} unavailable`,
    '',
    ...table(
      ['index', 'message', 'caption', 'sent at', 'attachments'],
      album.children.map((c) => [
        text(c.index),
        c.messageId,
        captionCell(c.caption, c.history, c.withdrawnAt),
        text(c.sentAt),
        attachmentsCell(c.attachments),
      ]),
    ),
    '',
    ...decisionsTable(album.decisions),
  ]);
}

export function formatMessage(message: MessageStatus): string {
  return terminalLines([
    `Message ${message.key.messageId}  (${message.key.provider} / account ${message.key.accountId} / conversation ${message.key.conversationId}, workspace ${message.key.workspace})`,
    `workflow id:    ${message.workflowId}`,
    `album:          ${message.albumKey ? `${message.albumKey.albumId} (index ${text(message.index)}, total ${text(message.total)})` : 'none (standalone)'}`,
    `caption:        ${captionCell(message.caption, message.history, message.withdrawnAt)}`,
    ...historyLines(message.history),
    `sent at:        ${text(message.sentAt)}`,
    `received:       ${message.receivedAt} (${plural(message.deliveryCount, 'delivery', 'deliveries')}, last ${message.lastReceivedAt})`,
    `attachments:    ${attachmentsCell(message.attachments)}`,
    '',
    ...decisionsTable(message.decisions),
  ]);
}

export function formatAlbumList(list: AlbumListBody): string {
  if (list.items.length === 0) return 'No albums.';
  const rows = list.items.map((a) => [
    a.firstReceivedAt,
    a.state,
    String(a.distinctChildren),
    a.review.required ? a.review.reasons.join(',') : '-',
    `${a.key.provider}/${a.key.accountId}/${a.key.conversationId}/${a.key.albumId}`,
  ]);
  const more = list.nextCursor ? ['', `More: --cursor ${list.nextCursor}`] : [];
  return terminalLines([...table(['first received', 'state', 'children', 'review', 'album'], rows), ...more]);
}

/** The body of GET /workspaces/:workspace/erasures/:id. */
export interface ErasureProgress {
  id: string;
  state: 'running' | 'done';
  counts: Record<string, number>;
  scope: 'album' | 'message' | 'conversation' | 'workspace';
  requestedAt: string;
  requestedBy: string;
  finishedAt: string | null;
}

export function formatErasure(erasure: ErasureProgress, workspace: string): string {
  const count = (name: string) => erasure.counts[name] ?? 0;
  const known = new Set([...purgeCountLabels.map(([name]) => name), 'mediaBytes']);
  const rows = [
    ...purgeCountLabels.map(([name, label]) => [
      label,
      `${count(name)}${name === 'mediaObjects' ? ` (${byteSize(count('mediaBytes'))})` : ''}`,
    ]),
    ...Object.keys(erasure.counts)
      .filter((name) => !known.has(name))
      .map((name) => [name, String(count(name))]),
  ];
  return terminalLines([
    `Erasure ${erasure.id}  (${erasure.scope}, workspace ${workspace})`,
    `state:          ${erasure.state === 'done' ? `done at ${text(erasure.finishedAt)}` : 'running'}`,
    `requested:      ${erasure.requestedAt} by ${erasure.requestedBy}`,
    '',
    erasure.state === 'done' ? 'Removed:' : 'Removed so far:',
    ...table(['what', 'count'], rows),
  ]);
}
