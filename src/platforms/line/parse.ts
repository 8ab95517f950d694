// The native LINE Messaging API contract: a webhook body is `{ destination, events: [...] }`, zero or
// more events. Kept apart from the UnifyPort and Telegram parsers; all three produce the same stored child.
//
// What identifies something (destination, webhookEventId, the source's ids, message.id, imageSet.id)
// must be a non-empty string without control characters, or the whole body is refused: a guess there
// could merge two chats or split an album. Descriptive fields (sizes, names, times) of the wrong type
// are kept as unknown (null); imageSet's index and total of the wrong type are kept raw and flagged, as
// UnifyPort's album metadata is.

import type { AlbumKey, JsonObject, JsonValue, MessageKey } from '../../domain/types.js';
import { albumMetadataOf, identityProblem, maxEventIdLength, type AttachmentInput, type ChildMessage } from '../../domain/child.js';
import { holdsUnstorableText, textProblem, unstorableTextProblem } from '../../domain/storable-text.js';
import type { BodyTimes } from '../body-times.js';
import { isObject, nonEmptyString, nonNegativeSafeInteger, parseJsonObject } from '../json-body.js';

/** The provider of every LINE child, and the source of its events. */
export const lineProvider = 'line';

/** The message types that carry content to download (the content API, or `originalContentUrl`). */
const contentTypes = new Set(['image', 'video', 'audio', 'file']);

export type LineRejectionCode = 'invalid_json' | 'invalid_webhook' | 'unstorable_webhook' | 'missing_identity' | 'invalid_identity';

/** Why an event was recorded without storing a child: it is not a message (follow, join, postback, …). */
export type LineIgnoredReason = 'other_event';

export type LineEvent =
  | { kind: 'child'; eventId: string; type: 'message'; raw: string; child: ChildMessage }
  /** `unsend`: the sender withdrew the message `key` (stored or not). */
  | { kind: 'unsend'; eventId: string; type: 'unsend'; raw: string; key: MessageKey; unsentAt: string | null }
  | { kind: 'ignored'; eventId: string; type: string; raw: string; reason: LineIgnoredReason }
  /** An event whose `timestamp` is before the horizon: answered, never stored (a replay of a captured body). */
  | { kind: 'too_old'; eventId: string; type: string };

export type ParsedLineWebhook =
  { kind: 'events'; destination: string; events: LineEvent[] } | { kind: 'rejected'; code: LineRejectionCode; message: string };

/** A name an unknown event type may be recorded under; anything else is recorded as `unknown`. */
const eventTypeName = /^[a-z][A-Za-z0-9_]{0,63}$/;
/** The largest time a JavaScript Date holds, in ms. */
const maxEpochMs = 8_640_000_000_000_000;

class Rejection extends Error {
  constructor(
    readonly code: LineRejectionCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Parses a verified LINE webhook body that came through the channel `channel` of `workspace`. Each
 * event's id is `<destination>:<webhookEventId>`; a message's child is (workspace, `line`, destination,
 * groupId | roomId | userId, message.id), its album the same scope with `imageSet.id`. Each event's raw
 * JSON (with the body's destination) is what is stored for it. An event whose `timestamp` is before
 * `notBefore` (ms since the epoch) is `too_old`; one without a usable timestamp is taken as recent.
 */
export function parseLineWebhook(workspace: string, channel: string, body: Buffer, notBefore = -Infinity): ParsedLineWebhook {
  const parsed = parseJsonObject(body, 'webhook body');
  if (!parsed.ok) return reject(parsed.problem === 'invalid_json' ? 'invalid_json' : 'invalid_webhook', parsed.message);
  const webhook = parsed.value;
  if (holdsUnstorableText(webhook)) {
    return reject('unstorable_webhook', `the webhook body holds text PostgreSQL cannot store (${unstorableTextProblem})`);
  }
  try {
    const destination = identifier(webhook.destination, 'destination');
    if (!Array.isArray(webhook.events)) throw new Rejection('invalid_webhook', 'events must be a list (empty for a verification)');
    const events = webhook.events.map((event, i) => parseEvent(workspace, channel, destination, event, `events[${i}]`, notBefore));
    return { kind: 'events', destination, events };
  } catch (err) {
    if (err instanceof Rejection) return reject(err.code, err.message);
    throw err;
  }
}

function reject(code: LineRejectionCode, message: string): ParsedLineWebhook {
  return { kind: 'rejected', code, message };
}

function parseEvent(workspace: string, channel: string, destination: string, event: JsonValue, path: string, notBefore: number): LineEvent {
  if (!isObject(event)) throw new Rejection('invalid_webhook', `${path} must be an event object`);
  const eventId = `${destination}:${identifier(event.webhookEventId, `${path}.webhookEventId`)}`;
  if (eventId.length > maxEventIdLength) {
    throw new Rejection(
      'invalid_identity',
      `destination and ${path}.webhookEventId are longer than ${maxEventIdLength} characters together`,
    );
  }
  const raw = JSON.stringify({ destination, ...event });
  const type = typeof event.type === 'string' && eventTypeName.test(event.type) ? event.type : 'unknown';
  if ((epochMs(event.timestamp) ?? Infinity) < notBefore) return { kind: 'too_old', eventId, type };
  if (type !== 'message' && type !== 'unsend') return { kind: 'ignored', eventId, type, raw, reason: 'other_event' };

  const scope = { workspace, provider: lineProvider, accountId: destination, conversationId: conversationOf(event.source, path) };
  if (type === 'unsend') {
    const unsend = isObject(event.unsend) ? event.unsend : null;
    if (unsend === null) throw new Rejection('missing_identity', `missing child identity: ${path}.unsend.messageId`);
    const key: MessageKey = { ...scope, messageId: identifier(unsend.messageId, `${path}.unsend.messageId`) };
    refuseLongIdentity(key, null);
    return { kind: 'unsend', eventId, type, raw, key, unsentAt: epochTime(event.timestamp) };
  }

  const message = isObject(event.message) ? event.message : null;
  if (message === null) throw new Rejection('missing_identity', `missing child identity: ${path}.message.id`);
  const key: MessageKey = { ...scope, messageId: identifier(message.id, `${path}.message.id`) };
  const attachment = attachmentOf(channel, message, `${path}.message`);
  const caption = captionOf(message);

  let albumKey: AlbumKey | null = null;
  let album: ChildMessage['album'] = null;
  const imageSet = message.type === 'image' && isObject(message.imageSet) ? message.imageSet : null;
  if (imageSet !== null) {
    albumKey = { ...scope, albumId: identifier(imageSet.id, `${path}.message.imageSet.id`) };
    album = albumMetadataOf(imageSet);
  }
  refuseLongIdentity(key, albumKey);
  const child: ChildMessage = {
    key,
    albumKey,
    album,
    caption,
    sentAt: epochTime(event.timestamp),
    attachments: attachment === null ? [] : [attachment],
  };
  return { kind: 'child', eventId, type, raw, child };
}

function refuseLongIdentity(key: MessageKey, albumKey: AlbumKey | null): void {
  const problem = identityProblem(key, albumKey);
  if (problem !== null) throw new Rejection('invalid_identity', problem);
}

/** The chat a message belongs to: the group, else the room, else the one-to-one chat with the user. */
function conversationOf(source: JsonValue | undefined, path: string): string {
  if (!isObject(source)) throw new Rejection('missing_identity', `missing child identity: ${path}.source`);
  for (const field of ['groupId', 'roomId', 'userId'] as const) {
    if (source[field] !== undefined) return identifier(source[field], `${path}.source.${field}`);
  }
  throw new Rejection('missing_identity', `missing child identity: ${path}.source.groupId, roomId or userId`);
}

/**
 * What a person reads of a message without content to download: a text's text, a location's title and
 * address; null for the rest (a sticker is a child with neither caption nor attachment).
 */
function captionOf(message: JsonObject): string | null {
  if (message.type === 'text') return nonEmptyString(message.text);
  if (message.type !== 'location') return null;
  const lines = [nonEmptyString(message.title), nonEmptyString(message.address)].filter((line) => line !== null);
  return lines.length === 0 ? null : lines.join('\n');
}

/**
 * The message's one attachment: LINE's own content (downloaded from the content API by message id with
 * the channel's token), or an `external` provider's `originalContentUrl`; null for a message without
 * content (text, location, sticker).
 */
function attachmentOf(channel: string, message: JsonObject, path: string): AttachmentInput | null {
  const kind = typeof message.type === 'string' ? message.type : null;
  if (kind === null || !contentTypes.has(kind)) return null;
  const provider = isObject(message.contentProvider) ? message.contentProvider : {};
  const external = provider.type === 'external';
  const url = external ? nonEmptyString(provider.originalContentUrl) : null;
  if (external && url === null) throw new Rejection('invalid_webhook', `${path}.contentProvider.originalContentUrl must be a URL`);
  return {
    position: 0,
    kind,
    url,
    mimeType: null,
    declaredSize: nonNegativeSafeInteger(message.fileSize),
    fileName: nonEmptyString(message.fileName),
    telegramFile: null,
    lineChannel: external ? null : channel,
  };
}

/** LINE's times are milliseconds since the epoch; null when absent or not such a number. */
function epochMs(value: JsonValue | undefined): number | null {
  const ms = nonNegativeSafeInteger(value);
  return ms === null || ms === 0 || ms > maxEpochMs ? null : ms;
}

function epochTime(value: JsonValue | undefined): string | null {
  const ms = epochMs(value);
  return ms === null ? null : new Date(ms).toISOString();
}

/** A webhook body's times: each event's `timestamp` (ms since the epoch). */
export const webhookTimes: BodyTimes = {
  unitMs: 1,
  fields: (body) => {
    const events = isObject(body) ? body.events : undefined;
    return Array.isArray(events) ? events.filter(isObject).map((event) => ({ holder: event, field: 'timestamp' })) : [];
  },
};

function identifier(value: JsonValue | undefined, path: string): string {
  if (value === undefined) throw new Rejection('missing_identity', `missing identity: ${path}`);
  const text = nonEmptyString(value);
  if (text === null || textProblem(text, 'identifier') !== null) {
    throw new Rejection('invalid_identity', `${path} must be a non-empty string without control characters`);
  }
  return text;
}
