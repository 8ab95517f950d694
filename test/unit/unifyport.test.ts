import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxWorkflowIdLength, type ChildMessage } from '../../src/domain/child.js';
import { isoTimestamp, parseEvent, type ParsedEvent } from '../../src/platforms/unifyport/parse.js';
import { unifyportEvent } from '../harness/events.js';

const workspace = 'ws';

function body(value: unknown): Buffer {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
}

function childEvent(message: Record<string, unknown> = {}, top: Record<string, unknown> = {}) {
  return { ...unifyportEvent({ id: 'evt_1', message: { id: 'msg_1', ...message } }), ...top };
}

function child(parsed: ParsedEvent): ChildMessage {
  if (parsed.kind !== 'child') throw new Error(`expected a child, got ${JSON.stringify(parsed)}`);
  return parsed.child;
}

describe('parseEvent', () => {
  it('derives the scoped child and album identities and the stored fields', () => {
    const parsed = parseEvent(
      workspace,
      body(
        childEvent({
          text: 'caption',
          sent_at: '2026-09-29T10:00:00Z',
          attachments: [{ type: 'image', url: 'https://x/a.jpg', mime_type: 'image/jpeg', size: 1234, file_name: 'a.jpg' }],
          album: { id: 'alb_1', index: 0, total: 3 },
        }),
      ),
    );
    expect(parsed).toEqual({
      kind: 'child',
      eventId: 'evt_1',
      type: 'message.received',
      child: {
        key: { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: 'conv_1', messageId: 'msg_1' },
        albumKey: { workspace, provider: 'whatsapp', accountId: 'acc_1', conversationId: 'conv_1', albumId: 'alb_1' },
        album: { raw: { id: 'alb_1', index: 0, total: 3 }, index: 0, total: 3, metadataInvalid: false },
        caption: 'caption',
        sentAt: '2026-09-29T10:00:00.000Z',
        attachments: [
          {
            position: 0,
            kind: 'image',
            url: 'https://x/a.jpg',
            mimeType: 'image/jpeg',
            declaredSize: 1234,
            fileName: 'a.jpg',
            telegramFile: null,
            lineChannel: null,
          },
        ],
      },
    });
  });

  it('turns numeric identity parts into strings', () => {
    const event = { ...childEvent(), account_id: 1001, data: { conversation: { id: -5 }, message: { id: 42, album: { id: 7 } } } };
    const parsed = child(parseEvent(workspace, body(event)));
    expect(parsed.key).toMatchObject({ accountId: '1001', conversationId: '-5', messageId: '42' });
    expect(parsed.albumKey?.albumId).toBe('7');
  });

  it('names every missing identity part', () => {
    expect(parseEvent(workspace, body({ id: 'e', type: 'message.received' }))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: provider, account_id, data.conversation.id, data.message.id',
    });
    expect(parseEvent(workspace, body(childEvent({ id: '' })))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: data.message.id',
    });
    expect(parseEvent(workspace, body(childEvent({}, { provider: null })))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: provider',
    });
  });

  it('refuses identity parts of the wrong type, unsafe integers and over-long identities', () => {
    expect(parseEvent(workspace, body(childEvent({ id: { nested: 1 } })))).toMatchObject({ code: 'invalid_identity' });
    expect(parseEvent(workspace, body(childEvent({}, { account_id: true })))).toMatchObject({ code: 'invalid_identity' });
    expect(parseEvent(workspace, body(childEvent({}, { account_id: 1.5 })))).toMatchObject({ code: 'invalid_identity' });
    expect(
      parseEvent(
        workspace,
        body(
          '{"id":"e","type":"message.received","provider":"p","account_id":12345678901234567890,"data":{"conversation":{"id":"c"},"message":{"id":"m"}}}',
        ),
      ),
    ).toMatchObject({ code: 'invalid_identity' });
    expect(parseEvent(workspace, body(childEvent({ id: 'm'.repeat(maxWorkflowIdLength) })))).toMatchObject({ code: 'invalid_identity' });
    expect(parseEvent(workspace, body(childEvent({ album: { id: 'é'.repeat(200) } })))).toMatchObject({ code: 'invalid_identity' });
  });

  it('refuses unparsable JSON and bodies that are not event objects', () => {
    expect(parseEvent(workspace, body('{"id":'))).toMatchObject({ kind: 'rejected', code: 'invalid_json' });
    expect(parseEvent(workspace, body(''))).toMatchObject({ kind: 'rejected', code: 'invalid_json' });
    for (const value of ['[]', 'null', '"message.received"', '42']) {
      expect(parseEvent(workspace, body(value))).toMatchObject({ kind: 'rejected', code: 'invalid_event' });
    }
    expect(parseEvent(workspace, body({ id: 'e' }))).toMatchObject({ code: 'invalid_event', message: 'the event has no "type"' });
    expect(parseEvent(workspace, body(childEvent({}, { id: { x: 1 } })))).toMatchObject({ code: 'invalid_event' });
    expect(parseEvent(workspace, body(childEvent({}, { id: 'e'.repeat(513) })))).toMatchObject({ code: 'invalid_event' });
  });

  it('ignores other event types without requiring a child identity', () => {
    expect(parseEvent(workspace, body({ id: 'evt_9', type: 'conversation.closed' }))).toEqual({
      kind: 'ignored',
      eventId: 'evt_9',
      type: 'conversation.closed',
    });
  });

  it('gives an event without an id the sha256 of its raw body', () => {
    const raw = body(childEvent({}, { id: undefined }));
    const expected = `sha256:${crypto.createHash('sha256').update(raw).digest('hex')}`;
    expect(parseEvent(workspace, raw)).toMatchObject({ kind: 'child', eventId: expected });
    const ignored = body({ type: 'other' });
    expect(parseEvent(workspace, ignored)).toMatchObject({
      kind: 'ignored',
      eventId: `sha256:${crypto.createHash('sha256').update(ignored).digest('hex')}`,
    });
  });

  it('treats a message without a usable album id as standalone, never guessing an album', () => {
    for (const album of [undefined, null, {}, { index: 0, total: 2 }, { id: '' }, { id: null }, { id: { x: 1 } }, 'alb_1', ['alb_1']]) {
      const parsed = child(parseEvent(workspace, body(childEvent({ album }))));
      expect(parsed.albumKey).toBeNull();
      expect(parsed.album).toBeNull();
    }
  });

  it('keeps usable album metadata and flags (never rejects) wrong-typed, negative or fractional values', () => {
    const cases: [unknown, unknown, number | null, number | null, boolean][] = [
      [0, 3, 0, 3, false],
      [5, undefined, 5, null, false],
      [undefined, undefined, null, null, false],
      [null, null, null, null, false],
      ['1', 3, null, 3, true],
      [-1, 3, null, 3, true],
      [1.5, 3, null, 3, true],
      [1, 0, 1, null, true],
      [1, -3, 1, null, true],
      [1, '3', 1, null, true],
      [1, 2.5, 1, null, true],
      [1, 2 ** 31, 1, null, true],
      [true, { n: 3 }, null, null, true],
    ];
    for (const [index, total, usableIndex, usableTotal, invalid] of cases) {
      const album = { id: 'alb', ...(index === undefined ? {} : { index }), ...(total === undefined ? {} : { total }) };
      const parsed = child(parseEvent(workspace, body(childEvent({ album }))));
      expect(parsed.album, JSON.stringify(album)).toEqual({ raw: album, index: usableIndex, total: usableTotal, metadataInvalid: invalid });
    }
  });

  it('takes the caption from text, else from caption', () => {
    expect(child(parseEvent(workspace, body(childEvent({ text: 'a', caption: 'b' })))).caption).toBe('a');
    expect(child(parseEvent(workspace, body(childEvent({ caption: 'b' })))).caption).toBe('b');
    expect(child(parseEvent(workspace, body(childEvent({ text: '', caption: 'b' })))).caption).toBe('b');
    expect(child(parseEvent(workspace, body(childEvent({ text: 42 })))).caption).toBeNull();
    expect(child(parseEvent(workspace, body(childEvent()))).caption).toBeNull();
  });

  it('numbers attachments by array position; a missing url stays null', () => {
    const parsed = child(
      parseEvent(
        workspace,
        body(childEvent({ attachments: [{ type: 'video', size: -1 }, 'junk', { url: 'https://x/b', size: 10.5, mime_type: 7 }] })),
      ),
    );
    expect(parsed.attachments).toEqual([
      { position: 0, kind: 'video', url: null, mimeType: null, declaredSize: null, fileName: null, telegramFile: null, lineChannel: null },
      { position: 1, kind: null, url: null, mimeType: null, declaredSize: null, fileName: null, telegramFile: null, lineChannel: null },
      {
        position: 2,
        kind: null,
        url: 'https://x/b',
        mimeType: null,
        declaredSize: null,
        fileName: null,
        telegramFile: null,
        lineChannel: null,
      },
    ]);
    expect(child(parseEvent(workspace, body(childEvent({ attachments: { url: 'x' } })))).attachments).toEqual([]);
  });

  it('keeps sent_at only when it is a valid ISO 8601 timestamp', () => {
    expect(child(parseEvent(workspace, body(childEvent({ sent_at: 'yesterday' })))).sentAt).toBeNull();
    expect(child(parseEvent(workspace, body(childEvent({ sent_at: 1790676000 })))).sentAt).toBeNull();
  });
});

describe('isoTimestamp', () => {
  it('normalises valid ISO 8601 date-times with an offset to UTC', () => {
    expect(isoTimestamp('2026-09-29T10:00:00Z')).toBe('2026-09-29T10:00:00.000Z');
    expect(isoTimestamp('2026-09-29T12:00:00.123+02:00')).toBe('2026-09-29T10:00:00.123Z');
    expect(isoTimestamp('2026-09-29T10:00+0000')).toBe('2026-09-29T10:00:00.000Z');
    expect(isoTimestamp('2024-02-29T00:00:00Z')).toBe('2024-02-29T00:00:00.000Z');
  });

  it('refuses impossible dates, missing offsets and other formats', () => {
    for (const value of [
      '2026-02-30T10:00:00Z',
      '2025-02-29T10:00:00Z',
      '2026-09-29T24:00:00Z',
      '2026-09-29T10:60:00Z',
      '2026-13-01T00:00:00Z',
      '2026-09-29T10:00:00',
      '2026-09-29',
      'Tue, 29 Sep 2026 10:00:00 GMT',
      '',
      null,
      1790676000,
    ]) {
      expect(isoTimestamp(value), String(value)).toBeNull();
    }
  });

  it('round-trips every instant written as ISO 8601', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }),
        (date) => {
          expect(isoTimestamp(date.toISOString())).toBe(date.toISOString());
        },
      ),
    );
  });
});
