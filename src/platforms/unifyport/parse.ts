import crypto from 'node:crypto';
import { holdsUnstorableText, textProblem, unstorableTextProblem } from '../../domain/storable-text.js';
import type { AlbumKey, MessageKey } from '../../domain/types.js';
import { albumMetadataOf, identityProblem, maxEventIdLength, type AttachmentInput, type ChildMessage } from '../../domain/child.js';
import { firstNonEmptyString, isObject, nonEmptyString, nonNegativeSafeInteger, parseJsonObject } from '../json-body.js';

/** The UnifyPort event type that carries one child message; every other type is recorded and ignored. */
export const childEventType = 'message.received';

export type RejectionCode = 'invalid_json' | 'invalid_event' | 'unstorable_event' | 'missing_identity' | 'invalid_identity';

export type ParsedEvent =
  | { kind: 'child'; eventId: string; type: string; child: ChildMessage }
  | { kind: 'ignored'; eventId: string; type: string }
  | { kind: 'rejected'; code: RejectionCode; message: string };

/** Parses and validates a verified UnifyPort body, deriving the scoped identities (docs/design.md, "Identities"). */
export function parseEvent(workspace: string, body: Buffer): ParsedEvent {
  const parsed = parseJsonObject(body, 'event');
  if (!parsed.ok) return reject(parsed.problem === 'invalid_json' ? 'invalid_json' : 'invalid_event', parsed.message);
  const event = parsed.value;
  if (holdsUnstorableText(event)) {
    return reject('unstorable_event', `the event holds text PostgreSQL cannot store (${unstorableTextProblem})`);
  }
  if (typeof event.type !== 'string' || event.type === '') return reject('invalid_event', 'the event has no "type"');

  const eventId = deriveEventId(event.id, body);
  if (eventId === null) {
    return reject('invalid_event', `"id" must be a non-empty string or integer of at most ${maxEventIdLength} characters`);
  }
  if (event.type !== childEventType) return { kind: 'ignored', eventId, type: event.type };

  const data = isObject(event.data) ? event.data : {};
  const conversation = isObject(data.conversation) ? data.conversation : {};
  const message = isObject(data.message) ? data.message : {};

  const identity = resolveIdentity({
    provider: event.provider,
    account_id: event.account_id,
    'data.conversation.id': conversation.id,
    'data.message.id': message.id,
  });
  if (identity.missing.length > 0) return reject('missing_identity', `missing child identity: ${identity.missing.join(', ')}`);
  if (identity.invalid.length > 0) {
    return reject(
      'invalid_identity',
      `must be a non-empty string without control characters, or a safe integer: ${identity.invalid.join(', ')}`,
    );
  }
  const [provider, accountId, conversationId, messageId] = identity.values as [string, string, string, string];
  const key: MessageKey = { workspace, provider, accountId, conversationId, messageId };
  const albumObject = isObject(message.album) ? message.album : null;
  const albumIdPart = albumObject ? identityPart(albumObject.id) : null;
  if (albumIdPart && 'problem' in albumIdPart && albumIdPart.problem === 'control') {
    return reject('invalid_identity', 'must be a non-empty string without control characters, or a safe integer: data.message.album.id');
  }
  const albumKey: AlbumKey | null =
    albumIdPart && 'value' in albumIdPart ? { workspace, provider, accountId, conversationId, albumId: albumIdPart.value } : null;

  const tooLong = identityProblem(key, albumKey);
  if (tooLong !== null) return reject('invalid_identity', tooLong);

  return {
    kind: 'child',
    eventId,
    type: event.type,
    child: {
      key,
      albumKey,
      album: albumObject && albumKey ? albumMetadataOf(albumObject) : null,
      caption: firstNonEmptyString(message.text, message.caption),
      sentAt: isoTimestamp(message.sent_at),
      attachments: Array.isArray(message.attachments) ? message.attachments.map(attachment) : [],
    },
  };
}

function reject(code: RejectionCode, message: string): ParsedEvent {
  return { kind: 'rejected', code, message };
}

/**
 * `invalid`: not a string or a safe integer; `control`: a string holding a control character, which no
 * path segment of the status API could name.
 */
type IdentityPart = { value: string } | { problem: 'missing' | 'invalid' | 'control' };

function identityPart(value: unknown): IdentityPart {
  if (value === undefined || value === null || value === '') return { problem: 'missing' };
  if (typeof value === 'string') return textProblem(value, 'identifier') === null ? { value } : { problem: 'control' };
  if (typeof value === 'number' && Number.isSafeInteger(value)) return { value: String(value) };
  return { problem: 'invalid' };
}

function resolveIdentity(fields: Record<string, unknown>): { values: string[]; missing: string[]; invalid: string[] } {
  const resolved = { values: [] as string[], missing: [] as string[], invalid: [] as string[] };
  for (const [name, value] of Object.entries(fields)) {
    const part = identityPart(value);
    if ('value' in part) resolved.values.push(part.value);
    else resolved[part.problem === 'missing' ? 'missing' : 'invalid'].push(name);
  }
  return resolved;
}

/** The event's own id, or `sha256:<hex of the raw body>` when it has none; null when the id is unusable. */
function deriveEventId(id: unknown, body: Buffer): string | null {
  if (id === undefined || id === null) return `sha256:${crypto.createHash('sha256').update(body).digest('hex')}`;
  const part = identityPart(id);
  return 'value' in part && part.value.length <= maxEventIdLength ? part.value : null;
}

const isoPattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/** A valid ISO 8601 date-time with an offset, normalised to UTC; anything else (2026-02-30, 24:00) is null. */
export function isoTimestamp(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const match = isoPattern.exec(value);
  const millis = Date.parse(value);
  if (!match || !Number.isFinite(millis)) return null;
  const [year, month, day, hour, minute] = match.slice(1, 6).map(Number) as [number, number, number, number, number];
  const wallClock = new Date(Date.UTC(year, month - 1, day, hour, minute));
  const rolledOver =
    wallClock.getUTCFullYear() !== year ||
    wallClock.getUTCMonth() !== month - 1 ||
    wallClock.getUTCDate() !== day ||
    wallClock.getUTCHours() !== hour ||
    wallClock.getUTCMinutes() !== minute;
  return rolledOver ? null : new Date(millis).toISOString();
}

function attachment(value: unknown, position: number): AttachmentInput {
  const item = isObject(value) ? value : {};
  return {
    position,
    kind: nonEmptyString(item.type),
    url: nonEmptyString(item.url),
    mimeType: nonEmptyString(item.mime_type),
    declaredSize: nonNegativeSafeInteger(item.size),
    fileName: nonEmptyString(item.file_name),
    telegramFile: null,
    lineChannel: null,
  };
}
