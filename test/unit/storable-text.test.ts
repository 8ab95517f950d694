import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseUpdate } from '../../src/platforms/telegram/parse.js';
import { parseEvent } from '../../src/platforms/unifyport/parse.js';
import { unifyportEvent } from '../harness/events.js';
import { holdsUnstorableText, isStorableText, textProblem } from '../../src/domain/storable-text.js';

/** Any UTF-16 code unit, lone surrogates included. */
const anyCodeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)), maxLength: 40 });

describe('isStorableText', () => {
  it('refuses a NUL and an unpaired surrogate, and nothing else', () => {
    for (const text of ['\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udc00\ud800', 'ok\ud83d']) expect(isStorableText(text)).toBe(false);
    for (const text of ['', 'caption', '\u0001\u001f\u007f\n\t', '\ud83d\udcf7', '\uffff', 'ünïcödé'])
      expect(isStorableText(text)).toBe(true);
  });

  it('agrees with what a UTF-8 round trip keeps: a storable text survives it unchanged', () => {
    fc.assert(
      fc.property(anyCodeUnits, (text) => {
        const survives = Buffer.from(text, 'utf8').toString('utf8') === text && !text.includes('\u0000');
        expect(isStorableText(text)).toBe(survives);
      }),
    );
  });

  it('finds an unstorable string or key anywhere in a JSON value', () => {
    expect(holdsUnstorableText({ a: [1, { b: 'fine' }] })).toBe(false);
    expect(holdsUnstorableText({ a: [1, { b: 'x\u0000' }] })).toBe(true);
    expect(holdsUnstorableText({ a: [1, { '\ud800': 'fine' }] })).toBe(true);
  });
});

/** A UnifyPort event's raw body: `message` merged into its message, `top` over its top-level fields. */
const event = (message: Record<string, unknown>, top: Record<string, unknown> = {}) =>
  Buffer.from(JSON.stringify({ ...unifyportEvent({ id: 'evt_1', message: { id: 'msg_1', ...message } }), ...top }));

describe('textProblem', () => {
  it('refuses every control character in an identifier, and all but tabs and line breaks in prose', () => {
    for (const text of ['a\u0001', '\u001b[2J', 'tab\there', 'line\nbreak', 'del\u007f', 'c1\u009b']) {
      expect(textProblem(text, 'identifier')).toBe('a control character');
    }
    for (const text of ['a\u0001', '\u001b[2J', 'del\u007f', 'c1\u009b', 'form\ffeed']) {
      expect(textProblem(text, 'prose')).toBe('a control character other than a tab or a line break');
    }
    for (const text of ['msg_1', 'ünïcödé \ud83d\udcf7', '']) expect(textProblem(text, 'identifier')).toBeNull();
    expect(textProblem('line 1\r\nline 2\tend', 'prose')).toBeNull();
    expect(textProblem('x\u0000', 'prose')).toBe('a NUL character or an unpaired surrogate');
  });
});

describe('the parsers refuse unstorable text before deriving an identity', () => {
  it.each([
    ['an album id', event({ album: { id: '\ud800' } })],
    ['a message id', event({ id: 'm\udfff' })],
    ['a provider', event({}, { provider: '\ud800' })],
    ['a caption', event({ text: 'nul \u0000 here' })],
    ['an event of another type', event({}, { type: 'message.deleted', note: '\u0000' })],
  ])('UnifyPort: %s holding a lone surrogate or a NUL is rejected as unstorable_event', (_what, body) => {
    expect(parseEvent('ws', body)).toEqual({
      kind: 'rejected',
      code: 'unstorable_event',
      message: 'the event holds text PostgreSQL cannot store (a NUL character or an unpaired surrogate)',
    });
  });

  it('Telegram: the same check, the same words', () => {
    const update = Buffer.from(JSON.stringify({ update_id: 1, message: { message_id: 1, chat: { id: 1 }, text: '\ud800' } }));
    expect(parseUpdate('ws', '1', update)).toEqual({
      kind: 'rejected',
      code: 'unstorable_update',
      message: 'the update holds text PostgreSQL cannot store (a NUL character or an unpaired surrogate)',
    });
  });
});

describe('the UnifyPort parser refuses an identity holding a control character', () => {
  it.each([
    ['data.message.id', event({ id: 'm\u0001' })],
    ['provider', event({}, { provider: 'wa\u001b[2J' })],
    ['account_id', event({}, { account_id: 'acc\u009b' })],
    ['data.message.album.id', event({ album: { id: 'alb\n1', index: 0 } })],
  ])('%s: invalid_identity, naming it', (field, body) => {
    const parsed = parseEvent('ws', body);
    expect(parsed).toMatchObject({ kind: 'rejected', code: 'invalid_identity' });
    expect((parsed as { message: string }).message).toContain(field);
  });

  it('an event id holding one is an invalid event', () => {
    expect(parseEvent('ws', event({}, { id: 'evt\u0007' }))).toMatchObject({ kind: 'rejected', code: 'invalid_event' });
  });

  it('a caption keeps its control characters (the views escape them)', () => {
    expect(parseEvent('ws', event({ text: 'bell \u0007 and \u001b[31m red' }))).toMatchObject({
      kind: 'child',
      child: { caption: 'bell \u0007 and \u001b[31m red' },
    });
  });
});

describe('the Telegram parser refuses an album or business id holding a control character', () => {
  it.each([
    ['media_group_id', { update_id: 1, message: { message_id: 1, chat: { id: 1 }, media_group_id: '13\u0007', text: 'x' } }],
    [
      'business_connection_id',
      { update_id: 1, business_message: { message_id: 1, chat: { id: 1 }, business_connection_id: 'bc\u001b', text: 'x' } },
    ],
  ])('%s: invalid_identity, naming it', (field, update) => {
    const parsed = parseUpdate('ws', '1', Buffer.from(JSON.stringify(update)));
    expect(parsed).toMatchObject({ kind: 'rejected', code: 'invalid_identity' });
    expect((parsed as { message: string }).message).toContain(`${field} must be a non-empty string without control characters`);
  });
});
