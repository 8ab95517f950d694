import { describe, expect, it } from 'vitest';
import { moveTimesToNow } from '../../src/platforms/body-times.js';
import { parseLineWebhook, webhookTimes, type ParsedLineWebhook } from '../../src/platforms/line/parse.js';
import { lineEvent, lineImageSet, recentMs, unsendOf, type LineEvent } from '../harness/events.js';

const destination = 'U0123456789abcdef0123456789abcdef';
const parse = (events: unknown, extra: Record<string, unknown> = {}) =>
  parseLineWebhook('ws', 'shop', Buffer.from(JSON.stringify({ destination, events, ...extra })));
const eventsOf = (parsed: ParsedLineWebhook) => {
  if (parsed.kind !== 'events') throw new Error(`rejected: ${parsed.message}`);
  return parsed.events;
};

describe('parseLineWebhook', () => {
  it('makes each image of a set a child of the album imageSet.id in its group, with index and total as LINE gives them', () => {
    const events = lineImageSet({ setId: 'set-1', count: 2, groupId: 'C1', userId: 'U1' });
    const parsed = eventsOf(parse(events));
    expect(parsed.map((e) => e.kind)).toEqual(['child', 'child']);
    const [first] = parsed;
    if (first?.kind !== 'child') throw new Error('no child');
    expect(first.eventId).toBe(`${destination}:${events[0]!.webhookEventId}`);
    expect(first.child.key).toEqual({
      workspace: 'ws',
      provider: 'line',
      accountId: destination,
      conversationId: 'C1',
      messageId: (events[0]!.message as { id: string }).id,
    });
    expect(first.child.albumKey?.albumId).toBe('set-1');
    expect([first.child.album?.index, first.child.album?.total, first.child.album?.metadataInvalid]).toEqual([1, 2, false]);
    expect(first.child.attachments).toEqual([
      {
        position: 0,
        kind: 'image',
        url: null,
        mimeType: null,
        declaredSize: null,
        fileName: null,
        telegramFile: null,
        lineChannel: 'shop',
      },
    ]);
    expect(first.child.sentAt).toBe(new Date(recentMs(1_790_762_400_000)).toISOString());
  });

  it('takes the room, else the user, as the conversation; an image without imageSet is standalone; old Android sets have no index', () => {
    const room = lineEvent({ type: 'message', source: { type: 'room', roomId: 'R1', userId: 'U1' }, message: { type: 'image', id: 'm1' } });
    const [android] = lineImageSet({ setId: 's', count: 1, userId: 'U2', withIndex: false });
    const [r, a] = eventsOf(parse([room, android]));
    if (r?.kind !== 'child' || a?.kind !== 'child') throw new Error('no child');
    expect([r.child.key.conversationId, r.child.albumKey]).toEqual(['R1', null]);
    expect([a.child.key.conversationId, a.child.albumKey?.albumId, a.child.album?.index, a.child.album?.total]).toEqual([
      'U2',
      's',
      null,
      null,
    ]);
  });

  it('keeps text and a location as captions, an external provider as its URL, a sticker as a child of its own, and records other events without a child', () => {
    const source = { type: 'user', userId: 'U1' };
    const text = lineEvent({ type: 'message', source, message: { type: 'text', id: 't', text: 'hello' } });
    const external = lineEvent({
      type: 'message',
      source,
      message: { type: 'video', id: 'v', contentProvider: { type: 'external', originalContentUrl: 'https://cdn.example/v.mp4' } },
    });
    const sticker = lineEvent({ type: 'message', source, message: { type: 'sticker', id: 's', packageId: '1', stickerId: '2' } });
    const location = lineEvent({
      type: 'message',
      source,
      message: {
        type: 'location',
        id: 'l',
        title: 'Tokyo Tower',
        address: '4 Chome-2-8 Shibakoen',
        latitude: 35.6586,
        longitude: 139.7454,
      },
    });
    const follow = lineEvent({ type: 'follow', source });
    const parsed = eventsOf(parse([text, external, sticker, location, follow]));
    expect(parsed.map((e) => [e.kind, e.type])).toEqual([
      ['child', 'message'],
      ['child', 'message'],
      ['child', 'message'],
      ['child', 'message'],
      ['ignored', 'follow'],
    ]);
    const children = parsed.map((e) => (e.kind === 'child' ? e.child : null));
    expect([children[0]?.caption, children[0]?.attachments]).toEqual(['hello', []]);
    expect(children[1]?.attachments[0]).toMatchObject({ kind: 'video', url: 'https://cdn.example/v.mp4', lineChannel: null });
    expect([children[2]?.key.messageId, children[2]?.albumKey, children[2]?.caption, children[2]?.attachments]).toEqual([
      's',
      null,
      null,
      [],
    ]);
    expect([children[3]?.caption, children[3]?.albumKey, children[3]?.attachments]).toEqual([
      'Tokyo Tower\n4 Chome-2-8 Shibakoen',
      null,
      [],
    ]);
  });

  it('reads an unsend as the withdrawal of the message it names, in its conversation', () => {
    const [image] = lineImageSet({ setId: 's', count: 1, groupId: 'C1' }) as [LineEvent];
    const [unsend] = eventsOf(parse([unsendOf(image, 1_790_762_500_000)]));
    expect(unsend).toMatchObject({
      kind: 'unsend',
      key: { accountId: destination, conversationId: 'C1', messageId: (image.message as { id: string }).id },
      unsentAt: new Date(1_790_762_500_000).toISOString(),
    });
  });

  it('takes an empty list (the console’s Verify) and flags wrong-typed index and total instead of refusing', () => {
    expect(eventsOf(parse([]))).toEqual([]);
    const [odd] = lineImageSet({ setId: 's', count: 1, groupId: 'C1' }) as [LineEvent];
    (odd.message as { imageSet: object }).imageSet = { id: 's', index: '1', total: -2 };
    const [child] = eventsOf(parse([odd]));
    if (child?.kind !== 'child') throw new Error('no child');
    expect([child.child.album?.index, child.child.album?.total, child.child.album?.metadataInvalid]).toEqual([null, null, true]);
  });

  it('refuses the whole body when an identity is missing, malformed, too long or unstorable', () => {
    const [image] = lineImageSet({ setId: 's', count: 1, groupId: 'C1' }) as [LineEvent];
    const without = (change: (event: Record<string, unknown>) => void) => {
      const copy = structuredClone(image) as Record<string, unknown>;
      change(copy);
      return parse([image, copy]);
    };
    const code = (parsed: ParsedLineWebhook) => (parsed.kind === 'rejected' ? parsed.code : 'accepted');
    expect(code(parseLineWebhook('ws', 'shop', Buffer.from('{"events": []}')))).toBe('missing_identity');
    expect(code(parse({}))).toBe('invalid_webhook');
    expect(code(without((e) => delete e.webhookEventId))).toBe('missing_identity');
    expect(code(without((e) => (e.source = { type: 'group', groupId: 7 })))).toBe('invalid_identity');
    expect(code(without((e) => ((e.message as Record<string, unknown>).id = 'a\u0007b')))).toBe('invalid_identity');
    expect(code(without((e) => (e.webhookEventId = 'x'.repeat(600))))).toBe('invalid_identity');
    expect(code(without((e) => ((e.message as Record<string, unknown>).id = 'x'.repeat(1200))))).toBe('invalid_identity');
    expect(code(without((e) => ((e.message as Record<string, unknown>).id = 'x\ud800')))).toBe('unstorable_webhook');
    expect(code(parseLineWebhook('ws', 'shop', Buffer.from('{')))).toBe('invalid_json');
  });
});

describe('parseLineWebhook with a horizon', () => {
  const horizon = 1_790_762_400_000;

  it('makes an event whose timestamp is before the horizon too_old, whatever its type; one at it or without a usable timestamp is parsed', () => {
    const [image] = lineImageSet({ setId: 's', count: 1, groupId: 'C1', timestamp: horizon - 1 });
    const follow = lineEvent({ type: 'follow', timestamp: horizon - 1, source: { type: 'user', userId: 'U1' } });
    const unsend = unsendOf(image!, horizon - 1);
    const [atHorizon] = lineImageSet({ setId: 's', count: 1, groupId: 'C1', timestamp: horizon });
    const undated = lineEvent({ type: 'follow', timestamp: 'yesterday', source: { type: 'user', userId: 'U1' } });
    const events = [image!, follow, unsend, atHorizon!, undated];
    const parsed = eventsOf(parseLineWebhook('ws', 'shop', Buffer.from(JSON.stringify({ destination, events })), horizon));
    expect(parsed.map((event) => event.kind)).toEqual(['too_old', 'too_old', 'too_old', 'child', 'ignored']);
    expect(parsed[0]).toEqual({ kind: 'too_old', eventId: `${destination}:${image!.webhookEventId}`, type: 'message' });
  });
});

describe('webhookTimes', () => {
  it("moves every event's timestamp of a file's bodies by one amount so that the latest is now", () => {
    const bodies = [
      { destination, events: [lineEvent({ timestamp: 1_000 }), lineEvent({ timestamp: 1_500 })] },
      { destination, events: [lineEvent({ timestamp: 2_000 })] },
    ];
    moveTimesToNow(bodies, webhookTimes, 10_000);
    expect(bodies.flatMap((body) => body.events.map((event) => event.timestamp))).toEqual([9_000, 9_500, 10_000]);
    moveTimesToNow(bodies, webhookTimes, 5_000);
    expect(bodies[1]!.events[0]!.timestamp).toBe(10_000);
  });
});
