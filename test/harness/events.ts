// What senders deliver to albumflow's webhooks, built one way for the tests, the fault suite and the bench:
// UnifyPort `message.received` events, Telegram Updates (made up, or the fixtures of test/fixtures/telegram/
// and variants of them) and LINE webhook bodies, and how each is sent: the route, UnifyPort's HMAC headers,
// Telegram's secret token, LINE's body signature, and the status that says the delivery is committed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseUpdate, updateTimes } from '../../src/platforms/telegram/parse.js';
import { projectRoot } from '../../src/common/paths.js';
import { signatureHeader } from '../../src/common/signature.js';
import { lineSignature } from '../../src/platforms/line/signature.js';
import { unique } from './random.js';
import type { FakeBotApi, FakeFile } from './servers/fake-bot-api.js';

/**
 * The fixtures' fixed times (test/fixtures/telegram, the LINE events made here, the dates tests write) are of
 * 2026-09-29 and 30; LINE and Telegram webhooks older than REPLAY_HORIZON_S are answered and not stored, so
 * tests send them moved by one amount, the same for the whole run, that makes 2026-09-30T10:00:00Z a minute
 * ago: their order and their distances stay, and a redelivery is still the same body.
 */
const fixtureShiftS = Math.floor(Date.now() / 1000) - 60 - 1_790_762_400;

/** A fixture's time in Unix seconds (a Telegram date), moved to this run's recent past. */
export function recentSeconds(fixtureSeconds: number): number {
  return fixtureSeconds + fixtureShiftS;
}

/** A fixture's time in ms since the epoch (a LINE timestamp), moved to this run's recent past. */
export function recentMs(fixtureMs: number): number {
  return fixtureMs + fixtureShiftS * 1000;
}

/** A UnifyPort webhook body (`message.received` and the other event types). */
export type UnifyPortEvent = Record<string, unknown>;

/** What `unifyportEvent` puts in an event; an identity field given as null is left out, to send an event without it. */
export interface EventFields {
  /** Default: a fresh id. */
  id?: unknown;
  /** Default: `message.received`. */
  type?: unknown;
  /** Default: `whatsapp`. */
  provider?: unknown;
  /** `account_id`; default `acc_1`. */
  accountId?: unknown;
  /** `data.conversation.id`; default `conv_1`. */
  conversationId?: unknown;
  /** `data.message` as sent (nulls too; undefined fields left out): its `id` and whatever else it carries (text, sent_at, attachments, album…). */
  message: Record<string, unknown>;
}

const without = (value: Record<string, unknown>, ...left: unknown[]) =>
  Object.fromEntries(Object.entries(value).filter(([, field]) => !left.includes(field)));
const withoutNulls = (value: Record<string, unknown>) => without(value, null, undefined);

/** A UnifyPort event carrying one child message. */
export function unifyportEvent(fields: EventFields): UnifyPortEvent {
  const given = (value: unknown, fallback: unknown) => (value === undefined ? fallback : value);
  return withoutNulls({
    id: given(fields.id, unique('evt')),
    type: given(fields.type, 'message.received'),
    provider: given(fields.provider, 'whatsapp'),
    account_id: given(fields.accountId, 'acc_1'),
    data: { conversation: { id: given(fields.conversationId, 'conv_1') }, message: without(fields.message, undefined) },
  });
}

export interface AlbumEventOptions {
  conversationId?: string;
  accountId?: string;
  provider?: string;
  albumId?: string;
  messageId: string;
  index?: unknown;
  total?: unknown;
  text?: string;
  sentAt?: string;
  attachments?: Array<Record<string, unknown>>;
}

/** A `message.received` event of an album's child with a photo; without `albumId` it is a standalone message. */
export function albumEvent(options: AlbumEventOptions): UnifyPortEvent {
  const album: Record<string, unknown> | undefined = options.albumId === undefined ? undefined : { id: options.albumId };
  if (album && options.index !== undefined) album.index = options.index;
  if (album && options.total !== undefined) album.total = options.total;
  return unifyportEvent({
    provider: options.provider,
    accountId: options.accountId,
    conversationId: options.conversationId,
    message: {
      id: options.messageId,
      text: options.text ?? `photo ${options.messageId}`,
      sent_at: options.sentAt ?? '2026-09-29T10:00:00Z',
      attachments: options.attachments ?? [{ type: 'image', mime_type: 'image/jpeg' }],
      album,
    },
  });
}

/** The seconds since the epoch, as `x-unifyport-timestamp` carries them. */
export function timestampNow(): string {
  return String(Math.floor(Date.now() / 1000));
}

/** The headers of a UnifyPort webhook signed with `secret`: `v1=` HMAC-SHA256 of "<timestamp>.<raw body>". */
export function unifyportHeaders(secret: string, body: string | Buffer, timestamp = timestampNow()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-unifyport-timestamp': timestamp,
    'x-unifyport-signature': signatureHeader(secret, timestamp, body),
  };
}

/** The headers of a Telegram webhook: the secret token given to setWebhook, or none with null. */
export function telegramHeaders(secretToken: string | null): Record<string, string> {
  return { 'content-type': 'application/json', ...(secretToken === null ? {} : { 'x-telegram-bot-api-secret-token': secretToken }) };
}

/** The headers of a LINE webhook: the body signed with the channel secret, or no signature with null. */
export function lineHeaders(channelSecret: string | null, body: string | Buffer): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...(channelSecret === null ? {} : { 'x-line-signature': lineSignature(channelSecret, body) }),
  };
}

/**
 * One webhook as its sender delivers it: a signed UnifyPort event, a Telegram Update for a bot of the
 * workspace, or a LINE webhook body for a channel of the workspace (signed with `channelSecret`).
 */
export type Delivery =
  | { route: 'unifyport'; workspace: string; secret: string; body: string | Buffer }
  | { route: 'telegram'; workspace: string; bot: string; secretToken: string | null; body: string | Buffer }
  | { route: 'line'; workspace: string; channel: string; channelSecret: string | null; body: string | Buffer };

/** The path and headers that deliver it (signed now). */
export function webhookRequest(delivery: Delivery): { path: string; headers: Record<string, string> } {
  const workspace = encodeURIComponent(delivery.workspace);
  if (delivery.route === 'unifyport')
    return { path: `/webhooks/unifyport/${workspace}`, headers: unifyportHeaders(delivery.secret, delivery.body) };
  if (delivery.route === 'telegram') {
    return { path: `/webhooks/telegram/${workspace}/${encodeURIComponent(delivery.bot)}`, headers: telegramHeaders(delivery.secretToken) };
  }
  return {
    path: `/webhooks/line/${workspace}/${encodeURIComponent(delivery.channel)}`,
    headers: lineHeaders(delivery.channelSecret, delivery.body),
  };
}

/** The answer that says a delivery is committed: 202 from the UnifyPort route (its body names the child), 200 from Telegram's and LINE's. */
export const committedStatus = { unifyport: 202, telegram: 200, line: 200 } as const;

/** A LINE webhook event as LINE sends it. */
export type LineEvent = Record<string, unknown> & { webhookEventId: string };

/** A LINE webhook body: the bot's user id and zero or more events. */
export interface LineBody {
  destination: string;
  events: LineEvent[];
}

/** The LINE image set sent by one person at once: `count` image message events, each with the set's id, its index (from 1) and total. */
export function lineImageSet(fields: {
  setId: string;
  count: number;
  /** The group the images were sent in; without it, the one-to-one chat with `userId`. */
  groupId?: string;
  userId?: string;
  /** An old Android client sends neither index nor total. */
  withIndex?: boolean;
  /** Milliseconds since the epoch of the first image. */
  timestamp?: number;
}): LineEvent[] {
  const { setId, count, groupId, userId = unique('U'), withIndex = true, timestamp = recentMs(1_790_762_400_000) } = fields;
  return Array.from({ length: count }, (_, i) =>
    lineEvent({
      type: 'message',
      timestamp: timestamp + i * 40,
      source: groupId === undefined ? { type: 'user', userId } : { type: 'group', groupId, userId },
      message: {
        type: 'image',
        id: unique(`${setId}-img${i + 1}`),
        quoteToken: unique('q'),
        contentProvider: { type: 'line' },
        imageSet: withIndex ? { id: setId, index: i + 1, total: count } : { id: setId },
      },
    }),
  );
}

/** A LINE event with a fresh webhookEventId, delivered for the first time, with the fields given. */
export function lineEvent(fields: Record<string, unknown>): LineEvent {
  return {
    mode: 'active',
    webhookEventId: unique('01J'),
    deliveryContext: { isRedelivery: false },
    timestamp: recentMs(1_790_762_400_000),
    ...fields,
  };
}

/** The same event delivered again, as LINE marks a redelivery. */
export function redeliveryOf(event: LineEvent): LineEvent {
  return { ...structuredClone(event), deliveryContext: { isRedelivery: true } };
}

/** The `unsend` event of a message event's message, from the same chat. */
export function unsendOf(event: LineEvent, timestamp = Date.now()): LineEvent {
  return lineEvent({ type: 'unsend', timestamp, source: event.source, unsend: { messageId: (event.message as { id: string }).id } });
}

/** The message id of a LINE message event. */
export function lineMessageId(event: LineEvent): string {
  return (event.message as { id: string }).id;
}

/** The LINE webhook bodies of examples/line-image-set.json (or another file of them), in order. */
export function lineBodies(file: string): LineBody[] {
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as LineBody | LineBody[];
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** A Telegram Update as the fixtures hold it. */
export type Update = Record<string, unknown> & { update_id: number };

/** The Updates of test/fixtures/telegram/<name>.json (one Update or a list), in order, their dates moved to the recent past. */
export function telegramFixture(name: string): Update[] {
  const parsed = JSON.parse(fs.readFileSync(path.join(projectRoot, 'test/fixtures/telegram', `${name}.json`), 'utf8')) as Update | Update[];
  const updates = Array.isArray(parsed) ? parsed : [parsed];
  for (const { holder, field } of updates.flatMap((update) => updateTimes.fields(update))) {
    if (typeof holder[field] === 'number') holder[field] = recentSeconds(holder[field]);
  }
  return updates;
}

/** The Message an Update carries (`message`, `channel_post`, `edited_message`, …). */
export function messageOf(update: Update): Record<string, unknown> & { message_id: number; chat: { id: number }; media_group_id?: string } {
  const key = Object.keys(update).find((name) => name !== 'update_id')!;
  return update[key] as ReturnType<typeof messageOf>;
}

type Message = ReturnType<typeof messageOf>;

/** A Message of a chat as the Bot API sends it, with a photo (its one size) or a document, in an album or not. */
export function telegramMessage(fields: {
  messageId: number;
  chatId: number;
  /** Seconds since the epoch. */
  date: number;
  mediaGroupId?: string;
  photo?: { fileId: string; uniqueId?: string; width: number; height: number };
  document?: Record<string, unknown>;
  caption?: string | null;
}): Message {
  const { photo } = fields;
  return withoutNulls({
    message_id: fields.messageId,
    chat: { id: fields.chatId, type: 'private' },
    date: fields.date,
    media_group_id: fields.mediaGroupId,
    photo: photo && [
      { file_id: photo.fileId, file_unique_id: photo.uniqueId ?? `u-${photo.fileId}`, width: photo.width, height: photo.height },
    ],
    document: fields.document,
    caption: fields.caption,
  }) as Message;
}

/** The Update that delivers a Message: a new one (`message`) or an edit of it (`edited_message`). */
export function telegramUpdate(updateId: number, message: Message, kind: 'message' | 'edited_message' = 'message'): Update {
  return { update_id: updateId, [kind]: message };
}

/** Gives every file id and file unique id under `value` the suffix. */
function renameFiles(value: unknown, suffix: string): void {
  if (Array.isArray(value)) for (const item of value) renameFiles(item, suffix);
  else if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    for (const [key, child] of Object.entries(object)) {
      if ((key === 'file_id' || key === 'file_unique_id') && typeof child === 'string') object[key] = `${child}-${suffix}`;
      else renameFiles(child, suffix);
    }
  }
}

/**
 * Other Updates of the same shape: update_id and message_id moved by `offset` and other files (so they
 * are new children, not redeliveries of the fixture's), then each Message changed by `change`.
 */
export function variant(updates: readonly Update[], offset: number, change: (message: Message) => void = () => {}): Update[] {
  return updates.map((update) => {
    const copy = structuredClone(update);
    copy.update_id += offset;
    messageOf(copy).message_id += offset;
    renameFiles(messageOf(copy), `v${offset}`);
    change(messageOf(copy));
    return copy;
  });
}

/** The `edited_message` Update (update_id moved by `offset`) that changes the Message of `update` as `change` does. */
export function editOf(update: Update, offset: number, change: (message: Message) => void): Update {
  const message = structuredClone(messageOf(update));
  change(message);
  return { update_id: update.update_id + offset, edited_message: message };
}

/** The file id albumflow keeps for an Update's media (the largest photo size, or the other media), as its parser picks it. */
export function fileIdOf(update: Update): string {
  const parsed = parseUpdate('ws', '1', Buffer.from(JSON.stringify(update)));
  const file = parsed.kind === 'child' || parsed.kind === 'edit' ? parsed.child.attachments[0]?.telegramFile : undefined;
  if (!file) throw new Error(`update ${update.update_id} carries no media`);
  return file.fileId;
}

/**
 * Every file id albumflow downloads for an Update, as its parser picks them: each attachment's (one per
 * item of paid media), and a live photo's still after its video.
 */
export function fileIdsOf(update: Update): string[] {
  const parsed = parseUpdate('ws', '1', Buffer.from(JSON.stringify(update)));
  const attachments = parsed.kind === 'child' || parsed.kind === 'edit' ? parsed.child.attachments : [];
  return attachments.flatMap(({ telegramFile: file }) => (file ? [file.fileId, ...(file.still ? [file.still.fileId] : [])] : []));
}

/** Bytes standing for the file, different for every file id. */
export function fileContent(fileId: string): Buffer {
  return crypto.createHash('sha256').update(fileId).digest();
}

/** Makes the fake Bot API serve every file of these Updates (fileIdsOf) to the bot. */
export function serveFiles(api: FakeBotApi, token: string, updates: readonly Update[], file: Partial<FakeFile> = {}): void {
  api.addBot(token);
  for (const update of updates) {
    for (const fileId of fileIdsOf(update)) api.addFile(token, fileId, { content: fileContent(fileId), ...file });
  }
}
