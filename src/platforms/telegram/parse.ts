// The native Telegram Bot API contract: a webhook body is one Update. Kept apart from the UnifyPort
// parser (the two contracts are never mixed); both produce the same stored child.
//
// What identifies something (update_id, chat.id, message_id, business_connection_id, media_group_id,
// file ids) must have exactly the type the Bot API documents, or the body is refused: a guess there
// could merge two chats or split an album. Descriptive fields (sizes, names, dates) of the wrong type
// are kept as unknown (null) instead.

import type { Message, Update } from '@grammyjs/types';
import type { AlbumKey, JsonObject, JsonValue, MessageKey } from '../../domain/types.js';
import { identityTooLong, maxWorkflowIdLength, type AttachmentInput, type ChildMessage } from '../../domain/child.js';
import { holdsUnstorableText, textProblem, unstorableTextProblem } from '../../domain/storable-text.js';
import type { BodyTimes } from '../body-times.js';
import { firstNonEmptyString, isObject, nonEmptyString, nonNegativeInt32, nonNegativeSafeInteger, parseJsonObject } from '../json-body.js';

/** The provider of every Telegram child, and the source of its events. */
export const telegramProvider = 'telegram';

/** Updates that bring a new message. */
export const messageUpdateTypes = ['message', 'channel_post', 'business_message'] as const satisfies readonly (keyof Update)[];
/** Updates that bring a new version of a message the bot has seen. */
export const editUpdateTypes = [
  'edited_message',
  'edited_channel_post',
  'edited_business_message',
] as const satisfies readonly (keyof Update)[];
/** Updates that withdraw messages the bot has seen: a connected business account's messages were deleted (Bot API 10). */
export const deletionUpdateTypes = ['deleted_business_messages'] as const satisfies readonly (keyof Update)[];
/** Every update type albumflow reads: what `setWebhook`'s `allowed_updates` asks for. Others are recorded and ignored. */
export const readUpdateTypes = [...messageUpdateTypes, ...editUpdateTypes, ...deletionUpdateTypes];

type MessageUpdateType = (typeof messageUpdateTypes)[number];
type EditUpdateType = (typeof editUpdateTypes)[number];
type DeletionUpdateType = (typeof deletionUpdateTypes)[number];
/** The update types that carry a Message. */
type MessageBearingType = MessageUpdateType | EditUpdateType;

const businessUpdateTypes: readonly MessageBearingType[] = ['business_message', 'edited_business_message'];

/** The media a message may carry after `paid_media`, `live_photo` and `photo`, in the order the first present one is taken (docs/telegram.md). */
const mediaFields = [
  'video',
  'animation',
  'document',
  'audio',
  'voice',
  'video_note',
  'sticker',
] as const satisfies readonly (keyof Message)[];

export type TelegramRejectionCode = 'invalid_json' | 'invalid_update' | 'unstorable_update' | 'missing_identity' | 'invalid_identity';

/**
 * Why a Telegram Update was recorded without storing a child: an update type albumflow does not read, a
 * message with nothing albumflow keeps (none of the media below, no text or caption: a poll, a location, a
 * service message such as a member joining), or a message Telegram has not sent yet.
 */
export type IgnoredReason = 'other_update' | 'no_content' | 'unsent_message';

export type ParsedUpdate =
  | { kind: 'child'; eventId: string; type: MessageUpdateType; child: ChildMessage }
  /** A new version of a stored child: its caption and media as they are now. */
  | { kind: 'edit'; eventId: string; type: EditUpdateType; child: ChildMessage; editedAt: string | null }
  /** Messages of a business account's chat were deleted: each child named (stored or not) is withdrawn. */
  | { kind: 'deleted'; eventId: string; type: DeletionUpdateType; keys: MessageKey[] }
  | { kind: 'ignored'; eventId: string; type: string; reason: IgnoredReason }
  /** A message whose `edit_date`, else `date`, is before the horizon: answered, never stored (a replay of a captured body). */
  | { kind: 'too_old'; eventId: string; type: MessageBearingType }
  | { kind: 'rejected'; code: TelegramRejectionCode; message: string };

/** A name an unknown update type may be recorded under; anything else is recorded as `unknown`. */
const updateTypeName = /^[a-z][a-z0-9_]{0,63}$/;
/** The largest Unix time a JavaScript Date holds (8.64e15 ms). */
const maxUnixSeconds = 8_640_000_000_000;

/**
 * Parses a verified Telegram webhook body for the bot `botId` (the number before `:` in its token).
 * The event id is `<bot id>:<update_id>`; the child's identity is (workspace, `telegram`, bot id,
 * chat — `<business_connection_id>:<chat.id>` for a business chat —, message_id), its album the same
 * scope with `media_group_id`. A message whose `edit_date`, else `date`, is before `notBefore` (ms since
 * the epoch) is `too_old`; one without a usable date, and an update without a message (another update
 * type, a deletion of business messages), are taken as recent.
 */
export function parseUpdate(workspace: string, botId: string, body: Buffer, notBefore = -Infinity): ParsedUpdate {
  const parsed = parseJsonObject(body, 'update');
  if (!parsed.ok) return reject(parsed.problem === 'invalid_json' ? 'invalid_json' : 'invalid_update', parsed.message);
  const update = parsed.value;
  if (holdsUnstorableText(update)) {
    return reject('unstorable_update', `the update holds text PostgreSQL cannot store (${unstorableTextProblem})`);
  }
  if (update.update_id === undefined) return reject('invalid_update', 'the update has no update_id');
  const updateId = nonNegativeSafeInteger(update.update_id);
  if (updateId === null) return reject('invalid_update', 'update_id must be a non-negative integer below 2^53');
  const eventId = `${botId}:${updateId}`;

  const present = readUpdateTypes.filter((type) => update[type] !== undefined);
  if (present.length > 1) return reject('invalid_update', `an update carries one message, this one has ${present.join(', ')}`);
  const type = present[0];
  if (type === undefined) return { kind: 'ignored', eventId, type: otherUpdateType(update), reason: 'other_update' };
  if (type === 'deleted_business_messages') return deletedMessages(workspace, botId, eventId, type, update[type]);
  const message = update[type];
  if (!isObject(message)) return reject('invalid_update', `${type} must be a Message object`);
  const madeAt = unixSeconds(message.edit_date) ?? unixSeconds(message.date);
  if (madeAt !== null && madeAt * 1000 < notBefore) return { kind: 'too_old', eventId, type };

  const scope = conversationScope(workspace, botId, type, message, businessUpdateTypes.includes(type));
  if ('code' in scope) return scope;
  if (message.message_id === undefined) return reject('missing_identity', `missing child identity: ${type}.message_id`);
  const messageNumber = nonNegativeSafeInteger(message.message_id);
  if (messageNumber === null) return reject('invalid_identity', `${type}.message_id must be a non-negative integer below 2^53`);
  // Telegram sends 0 for a message it scheduled instead of sending (or an ephemeral one): no identity yet.
  if (messageNumber === 0) return { kind: 'ignored', eventId, type, reason: 'unsent_message' };

  const attachments = attachmentsOf(type, message);
  if (typeof attachments === 'string') return reject('invalid_update', attachments);
  // A text message is a child without attachments, as UnifyPort's message without attachments is.
  const caption = firstNonEmptyString(message.caption, message.text);
  if (attachments.length === 0 && caption === null) return { kind: 'ignored', eventId, type, reason: 'no_content' };

  const key: MessageKey = { ...scope, messageId: String(messageNumber) };
  let albumKey: AlbumKey | null = null;
  if (message.media_group_id !== undefined) {
    const albumId = identifierString(message.media_group_id);
    if (albumId === null) return reject('invalid_identity', `${type}.media_group_id must be a non-empty string without control characters`);
    albumKey = { ...scope, albumId };
  }
  if (identityTooLong(key, albumKey)) {
    return reject('invalid_identity', `the child or album identity is longer than ${maxWorkflowIdLength} characters once encoded`);
  }

  const child: ChildMessage = {
    key,
    albumKey,
    album: null,
    caption,
    sentAt: unixTime(message.date),
    attachments,
  };
  if (isEditUpdate(type)) return { kind: 'edit', eventId, type, child, editedAt: unixTime(message.edit_date) };
  return { kind: 'child', eventId, type, child };
}

function reject(code: TelegramRejectionCode, message: string): ParsedUpdate {
  return { kind: 'rejected', code, message };
}

function isEditUpdate(type: MessageBearingType): type is EditUpdateType {
  return (editUpdateTypes as readonly string[]).includes(type);
}

function otherUpdateType(update: JsonObject): string {
  const name = Object.keys(update).find((key) => key !== 'update_id');
  return name !== undefined && updateTypeName.test(name) ? name : 'unknown';
}

type Rejection = Extract<ParsedUpdate, { kind: 'rejected' }>;

/**
 * The bot's chat with `chat.id`, or — when the message comes through a business connection — the
 * business account's chat, which Telegram says is independent of any bot chat with the same id.
 * `type` names the object (a Message, or what a deletion names) in messages.
 */
function conversationScope(
  workspace: string,
  botId: string,
  type: string,
  message: JsonObject,
  business: boolean,
): Omit<MessageKey, 'messageId'> | Rejection {
  const chat = isObject(message.chat) ? message.chat : null;
  if (chat === null || chat.id === undefined)
    return { kind: 'rejected', code: 'missing_identity', message: `missing child identity: ${type}.chat.id` };
  if (typeof chat.id !== 'number' || !Number.isSafeInteger(chat.id)) {
    return { kind: 'rejected', code: 'invalid_identity', message: `${type}.chat.id must be an integer between -(2^53) and 2^53` };
  }
  const base = { workspace, provider: telegramProvider, accountId: botId };
  const connection = message.business_connection_id;
  if (connection === undefined) {
    if (business) {
      return { kind: 'rejected', code: 'missing_identity', message: `missing child identity: ${type}.business_connection_id` };
    }
    return { ...base, conversationId: String(chat.id) };
  }
  const connectionId = identifierString(connection);
  if (connectionId === null) {
    return {
      kind: 'rejected',
      code: 'invalid_identity',
      message: `${type}.business_connection_id must be a non-empty string without control characters`,
    };
  }
  return { ...base, conversationId: `${connectionId}:${chat.id}` };
}

/**
 * `deleted_business_messages`: the children of the business account's chat it names, withdrawn (stored
 * or not); the chat is scoped by the connection as the business messages it deletes are.
 */
function deletedMessages(
  workspace: string,
  botId: string,
  eventId: string,
  type: DeletionUpdateType,
  value: JsonValue | undefined,
): ParsedUpdate {
  if (!isObject(value)) return reject('invalid_update', `${type} must be a BusinessMessagesDeleted object`);
  const scope = conversationScope(workspace, botId, type, value, true);
  if ('code' in scope) return scope;
  if (value.message_ids === undefined) return reject('missing_identity', `missing child identity: ${type}.message_ids`);
  if (!Array.isArray(value.message_ids)) return reject('invalid_identity', `${type}.message_ids must be a list of message ids`);
  const messageIds = new Set<string>();
  for (const [i, id] of value.message_ids.entries()) {
    const messageNumber = nonNegativeSafeInteger(id);
    if (messageNumber === null) return reject('invalid_identity', `${type}.message_ids[${i}] must be a non-negative integer below 2^53`);
    messageIds.add(String(messageNumber));
  }
  const keys = [...messageIds].map((messageId): MessageKey => ({ ...scope, messageId }));
  if (keys.some((key) => identityTooLong(key, null))) {
    return reject('invalid_identity', `a child identity is longer than ${maxWorkflowIdLength} characters once encoded`);
  }
  return { kind: 'deleted', eventId, type, keys };
}

/**
 * The message's attachments: one per item of its paid media, else its one media (none when it has none
 * albumflow keeps); or what makes its media unusable.
 */
function attachmentsOf(type: MessageBearingType, message: JsonObject): AttachmentInput[] | string {
  if (message.paid_media !== undefined) return paidMedia(`${type}.paid_media`, message.paid_media);
  const media = attachmentOf(type, message);
  if (typeof media === 'string') return media;
  return media === null ? [] : [media];
}

/** The message's one attachment, null when it has no media albumflow keeps, or what makes its media unusable. */
function attachmentOf(type: MessageBearingType, message: JsonObject): AttachmentInput | string | null {
  // Telegram fills `photo` with a live photo's still too, for clients that know no live photos.
  if (message.live_photo !== undefined)
    return livePhoto(`${type}.live_photo`, message.live_photo, { path: `${type}.photo`, sizes: message.photo });
  if (message.photo !== undefined) return largestPhoto(`${type}.photo`, message.photo);
  for (const field of mediaFields) {
    const value = message[field];
    if (value === undefined) continue;
    if (!isObject(value)) return `${type}.${field} must be an object`;
    // A video note is round: `length` is both its width and its height.
    const side = field === 'video_note' ? nonNegativeInt32(value.length) : null;
    return fileAttachment(`${type}.${field}`, field, value, {
      width: side ?? nonNegativeInt32(value.width),
      height: side ?? nonNegativeInt32(value.height),
    });
  }
  return null;
}

/**
 * A live photo: its video, with the largest size of its still — the live photo's own `photo`, else the
 * one given beside it (the message's). A live photo without any still is kept as its video.
 */
function livePhoto(path: string, value: JsonValue, beside?: { path: string; sizes: JsonValue | undefined }): AttachmentInput | string {
  if (!isObject(value)) return `${path} must be an object`;
  const video = fileAttachment(path, 'live_photo', value, { width: nonNegativeInt32(value.width), height: nonNegativeInt32(value.height) });
  if (typeof video === 'string') return video;
  const sizes = value.photo !== undefined ? { path: `${path}.photo`, sizes: value.photo } : beside;
  if (sizes?.sizes === undefined) return video;
  const still = largestPhoto(sizes.path, sizes.sizes);
  if (typeof still === 'string') return still;
  const { fileId, fileUniqueId } = still.telegramFile!;
  return { ...video, telegramFile: { ...video.telegramFile!, still: { fileId, fileUniqueId } } };
}

/** What paid media holds, one attachment per item in order (a message holds up to ten). */
function paidMedia(path: string, value: JsonValue): AttachmentInput[] | string {
  if (!isObject(value)) return `${path} must be a PaidMediaInfo object`;
  const items = value.paid_media ?? [];
  if (!Array.isArray(items)) return `${path}.paid_media must be a list of PaidMedia objects`;
  const attachments: AttachmentInput[] = [];
  for (const [position, item] of items.entries()) {
    const itemPath = `${path}.paid_media[${position}]`;
    if (!isObject(item)) return `${itemPath} must be a PaidMedia object`;
    const attachment = paidItem(itemPath, item);
    if (typeof attachment === 'string') return attachment;
    attachments.push({ ...attachment, position });
  }
  return attachments;
}

/**
 * One item of paid media: a photo, a video or a live photo; a `preview` (the media before payment: its
 * size only) and an item of a type albumflow does not know have no file, and so nothing to download.
 */
function paidItem(path: string, item: JsonObject): AttachmentInput | string {
  switch (item.type) {
    case 'photo':
      return largestPhoto(`${path}.photo`, item.photo ?? null);
    case 'video': {
      const video = item.video;
      if (!isObject(video)) return `${path}.video must be an object`;
      return fileAttachment(`${path}.video`, 'video', video, {
        width: nonNegativeInt32(video.width),
        height: nonNegativeInt32(video.height),
      });
    }
    case 'live_photo':
      return livePhoto(`${path}.live_photo`, item.live_photo ?? null);
    default:
      return withoutFile(typeof item.type === 'string' && updateTypeName.test(item.type) ? item.type : null);
  }
}

function withoutFile(kind: string | null): AttachmentInput {
  return { position: 0, kind, url: null, mimeType: null, declaredSize: null, fileName: null, telegramFile: null, lineChannel: null };
}

/** Telegram sends every size it made of a photo; the largest by width × height is the one kept. */
function largestPhoto(path: string, sizes: JsonValue): AttachmentInput | string {
  if (!Array.isArray(sizes)) return `${path} must be a list of PhotoSize objects`;
  let best: { attachment: AttachmentInput | string; area: number } = { attachment: `${path} must not be empty`, area: -1 };
  for (const [i, size] of sizes.entries()) {
    if (!isObject(size)) return `${path}[${i}] must be a PhotoSize object`;
    const width = nonNegativeInt32(size.width);
    const height = nonNegativeInt32(size.height);
    const attachment = fileAttachment(`${path}[${i}]`, 'photo', size, { width, height });
    if (typeof attachment === 'string') return attachment;
    const area = (width ?? 0) * (height ?? 0);
    // Telegram lists sizes smallest first: on a tie the later (better) one wins.
    if (area >= best.area) best = { attachment, area };
  }
  return best.attachment;
}

function fileAttachment(
  path: string,
  kind: string,
  file: JsonObject,
  pixels: { width: number | null; height: number | null },
): AttachmentInput | string {
  const fileId = nonEmptyString(file.file_id);
  if (fileId === null) return `${path}.file_id must be a non-empty string`;
  const fileUniqueId = nonEmptyString(file.file_unique_id);
  if (fileUniqueId === null) return `${path}.file_unique_id must be a non-empty string`;
  return {
    position: 0,
    kind,
    url: null,
    mimeType: nonEmptyString(file.mime_type),
    declaredSize: nonNegativeSafeInteger(file.file_size),
    fileName: nonEmptyString(file.file_name),
    telegramFile: { fileId, fileUniqueId, ...pixels },
    lineChannel: null,
  };
}

/** A Bot API date: Unix seconds, always positive; null when absent or not such a number. */
function unixSeconds(value: JsonValue | undefined): number | null {
  const seconds = nonNegativeSafeInteger(value);
  return seconds === null || seconds === 0 || seconds > maxUnixSeconds ? null : seconds;
}

/** A Bot API date as ISO 8601; null when absent or not such a number. */
function unixTime(value: JsonValue | undefined): string | null {
  const seconds = unixSeconds(value);
  return seconds === null ? null : new Date(seconds * 1000).toISOString();
}

/** An Update's times: the `date` and `edit_date` (Unix seconds) of the Message it carries. */
export const updateTimes: BodyTimes = {
  unitMs: 1000,
  fields: (update) => {
    if (!isObject(update)) return [];
    const message = Object.values(update).find(isObject);
    return message === undefined ? [] : (['date', 'edit_date'] as const).map((field) => ({ holder: message, field }));
  },
};

/** A non-empty string that may be part of an id: no control character (no status path could name it). */
function identifierString(value: unknown): string | null {
  const text = nonEmptyString(value);
  return text !== null && textProblem(text, 'identifier') === null ? text : null;
}
