import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { albumWorkflowId, childKeyString } from '../../src/domain/keys.js';
import { maxWorkflowIdLength, type AttachmentInput, type ChildMessage } from '../../src/domain/child.js';
import { maxNestingDepth } from '../../src/platforms/json-body.js';
import { moveTimesToNow } from '../../src/platforms/body-times.js';
import { parseUpdate, readUpdateTypes, updateTimes, type ParsedUpdate } from '../../src/platforms/telegram/parse.js';
import { projectRoot } from '../../src/common/paths.js';

const workspace = 'ws';
const botId = '7000000001';

type Update = Record<string, unknown> & { update_id: number };

function fixture(name: string): Update[] {
  return JSON.parse(fs.readFileSync(path.join(projectRoot, 'test/fixtures/telegram', `${name}.json`), 'utf8')) as Update[];
}

function body(value: unknown): Buffer {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
}

function parse(update: unknown, bot = botId): ParsedUpdate {
  return parseUpdate(workspace, bot, body(update));
}

function child(parsed: ParsedUpdate): ChildMessage {
  if (parsed.kind !== 'child') throw new Error(`expected a child, got ${JSON.stringify(parsed)}`);
  return parsed.child;
}

function children(name: string): ChildMessage[] {
  return fixture(name).map((update) => child(parse(update)));
}

function onlyAttachment(message: ChildMessage): AttachmentInput {
  expect(message.attachments).toHaveLength(1);
  return message.attachments[0]!;
}

/** A minimal valid photo message update; `message` fields override. */
function photoUpdate(message: Record<string, unknown> = {}, top: Record<string, unknown> = {}, type = 'message') {
  return {
    update_id: 1,
    [type]: {
      message_id: 10,
      chat: { id: 42, type: 'private' },
      date: 1790676000,
      photo: [{ file_id: 'f-small', file_unique_id: 'u-small', width: 90, height: 90 }],
      ...message,
    },
    ...top,
  };
}

function rejection(parsed: ParsedUpdate) {
  if (parsed.kind !== 'rejected') throw new Error(`expected a rejection, got ${JSON.stringify(parsed)}`);
  return parsed;
}

describe('parseUpdate over the fixtures', () => {
  it('a photo album: one child per message, one album, the caption on the first child only, the largest size kept', () => {
    const album = children('photo-album');
    expect(album.map((c) => c.key)).toEqual(
      ['101', '102', '103'].map((messageId) => ({
        workspace,
        provider: 'telegram',
        accountId: botId,
        conversationId: '123456789',
        messageId,
      })),
    );
    for (const c of album) {
      expect(c.albumKey).toEqual({
        workspace,
        provider: 'telegram',
        accountId: botId,
        conversationId: '123456789',
        albumId: '13923456789012345',
      });
      expect(c.album).toBeNull();
      expect(c.sentAt).toBe('2026-09-29T10:00:00.000Z');
    }
    expect(album.map((c) => c.caption)).toEqual(['Our trip to the lake', null, null]);

    const photo = fixture('photo-album')[0]!.message as { photo: Array<{ file_id: string; file_unique_id: string }> };
    const largest = photo.photo[3]!;
    expect(onlyAttachment(album[0]!)).toEqual({
      position: 0,
      kind: 'photo',
      url: null,
      mimeType: null,
      declaredSize: 153_412,
      fileName: null,
      telegramFile: { fileId: largest.file_id, fileUniqueId: largest.file_unique_id, width: 1280, height: 960 },
      lineChannel: null,
    });
  });

  it('a photo + video album in a supergroup: each item keeps its own media type and details', () => {
    const [photo, video] = children('photo-video-album') as [ChildMessage, ChildMessage];
    expect(photo.key.conversationId).toBe('-1001234567890');
    expect(video.albumKey).toEqual(photo.albumKey);
    expect(onlyAttachment(photo)).toMatchObject({ kind: 'photo', telegramFile: { width: 1920, height: 1080 }, declaredSize: 301_552 });
    expect(onlyAttachment(video)).toMatchObject({
      kind: 'video',
      url: null,
      mimeType: 'video/mp4',
      fileName: 'boat.mp4',
      declaredSize: 4_873_210,
      telegramFile: { width: 1920, height: 1080 },
    });
    expect(video.caption).toBeNull();
  });

  it('a document album: documents keep name, MIME type and size, and have no pixels', () => {
    const album = children('document-album');
    expect(album.map((c) => onlyAttachment(c).fileName)).toEqual(['itinerary.pdf', 'tickets.pdf', 'photos.zip']);
    expect(album.map((c) => c.caption)).toEqual(['Itinerary', 'Tickets', null]);
    expect(onlyAttachment(album[2]!)).toMatchObject({
      kind: 'document',
      mimeType: 'application/zip',
      declaredSize: 12_530_004,
      telegramFile: { width: null, height: null },
    });
  });

  it('a channel post album is scoped to the channel', () => {
    const parsed = fixture('channel-post-album').map((update) => parse(update));
    expect(parsed.map((p) => p.kind === 'child' && p.type)).toEqual(['channel_post', 'channel_post']);
    const album = parsed.map(child);
    expect(album.map((c) => c.key.conversationId)).toEqual(['-1009876543210', '-1009876543210']);
    expect(album[0]!.albumKey?.albumId).toBe('13923456789077701');
  });

  it('a business message is scoped to its business connection, never to the bot chat with the same id', () => {
    const [first] = fixture('business-album');
    const business = child(parse(first));
    expect(business.key).toEqual({
      workspace,
      provider: 'telegram',
      accountId: botId,
      conversationId: 'AbCdEfGhIjKlMnOp_123:555000111',
      messageId: '101',
    });
    expect(business.albumKey?.conversationId).toBe('AbCdEfGhIjKlMnOp_123:555000111');

    const { business_connection_id: _, ...sameIdsInTheBotChat } = first!.business_message as Record<string, unknown>;
    const botChat = child(parse({ update_id: 2, message: sameIdsInTheBotChat }));
    expect(botChat.key.conversationId).toBe('555000111');
    expect(childKeyString(botChat.key)).not.toBe(childKeyString(business.key));
    expect(albumWorkflowId(botChat.albumKey!)).not.toBe(albumWorkflowId(business.albumKey!));
  });

  it('an edited caption is an edit of the stored child, not a new child', () => {
    const original = child(parse(fixture('photo-album')[0]));
    const parsed = parse(fixture('edited-caption')[0]);
    expect(parsed).toMatchObject({
      kind: 'edit',
      eventId: `${botId}:810000501`,
      type: 'edited_message',
      editedAt: '2026-09-29T10:10:00.000Z',
    });
    if (parsed.kind !== 'edit') throw new Error('expected an edit');
    expect(parsed.child.key).toEqual(original.key);
    expect(parsed.child.albumKey).toEqual(original.albumKey);
    expect(parsed.child.caption).toBe('Our trip to the lake (day 1)');
    expect(parsed.child.attachments).toEqual(original.attachments);
  });

  it('every edited_* update type is an edit', () => {
    for (const type of ['edited_message', 'edited_channel_post']) {
      expect(parse(photoUpdate({ edit_date: 1790676100 }, {}, type))).toMatchObject({
        kind: 'edit',
        type,
        editedAt: '2026-09-29T10:01:40.000Z',
      });
    }
    const business = parse(photoUpdate({ business_connection_id: 'bc', edit_date: 1790676100 }, {}, 'edited_business_message'));
    expect(business).toMatchObject({ kind: 'edit', type: 'edited_business_message', child: { key: { conversationId: 'bc:42' } } });
    expect(parse(photoUpdate({ edit_date: 'later' }, {}, 'edited_message'))).toMatchObject({ kind: 'edit', editedAt: null });
  });

  it('a 10-item album: ten distinct children of one album, ordered by numeric message_id', () => {
    const album = children('ten-item-album');
    expect(new Set(album.map((c) => childKeyString(c.key))).size).toBe(10);
    expect(new Set(album.map((c) => albumWorkflowId(c.albumKey!))).size).toBe(1);
    expect(album.map((c) => Number(c.key.messageId))).toEqual([301, 302, 303, 304, 305, 306, 307, 308, 309, 310]);
    expect(album.every((c) => c.album === null)).toBe(true);
  });

  it('a standalone photo has no album', () => {
    const [photo] = children('standalone-photo');
    expect(photo!.albumKey).toBeNull();
    expect(photo!.caption).toBe('Just one');
    expect(onlyAttachment(photo!).telegramFile).toMatchObject({ width: 1080, height: 1350 });
  });

  it('a text message is a standalone child without attachments, its text the caption', () => {
    const parsed = parse(fixture('text-message')[0]);
    expect(parsed).toMatchObject({ kind: 'child', eventId: `${botId}:810000801`, type: 'message' });
    expect(child(parsed)).toEqual({
      key: { workspace, provider: 'telegram', accountId: botId, conversationId: '123456789', messageId: '402' },
      albumKey: null,
      album: null,
      caption: 'hello bot',
      sentAt: '2026-09-29T10:06:50.000Z',
      attachments: [],
    });
    // An edited text is an edit of that child.
    const edited = parse({
      update_id: 2,
      edited_message: { ...(fixture('text-message')[0]!.message as object), text: 'hello, bot', edit_date: 1790676500 },
    });
    expect(edited).toMatchObject({ kind: 'edit', child: { caption: 'hello, bot', attachments: [] }, editedAt: '2026-09-29T10:08:20.000Z' });
  });

  it('other update types are recorded and ignored under their own name', () => {
    expect(fixture('unknown-update').map((update) => parse(update))).toEqual([
      { kind: 'ignored', eventId: `${botId}:810000901`, type: 'callback_query', reason: 'other_update' },
      { kind: 'ignored', eventId: `${botId}:810000902`, type: 'some_future_update', reason: 'other_update' },
    ]);
    expect(parse({ update_id: 3 })).toEqual({ kind: 'ignored', eventId: `${botId}:3`, type: 'unknown', reason: 'other_update' });
    expect(parse({ update_id: 4, ['X'.repeat(100)]: {} })).toMatchObject({ kind: 'ignored', type: 'unknown' });
  });

  it('the event id is the bot id and the update_id', () => {
    for (const name of ['photo-album', 'ten-item-album', 'channel-post-album']) {
      for (const update of fixture(name)) expect(parse(update)).toMatchObject({ eventId: `${botId}:${update.update_id}` });
    }
    expect(parse(photoUpdate(), '7000000002')).toMatchObject({ eventId: '7000000002:1' });
  });
});

describe('parseUpdate: media', () => {
  const file = (id: string, extra: Record<string, unknown> = {}) => ({ file_id: `f-${id}`, file_unique_id: `u-${id}`, ...extra });
  const mediaOf = (message: Record<string, unknown>) => onlyAttachment(child(parse(photoUpdate({ photo: undefined, ...message }))));

  it('takes the largest photo size by width × height, wherever it is in the list', () => {
    const photo = [file('a', { width: 800, height: 600 }), file('b', { width: 1280, height: 300 }), file('c', { width: 90, height: 90 })];
    expect(mediaOf({ photo }).telegramFile?.fileId).toBe('f-a');
    const tie = [file('a', { width: 10, height: 20 }), file('b', { width: 20, height: 10 })];
    expect(mediaOf({ photo: tie }).telegramFile?.fileId).toBe('f-b');
  });

  it('takes the first present of video, animation, document, audio, voice, video_note, sticker', () => {
    // An animation message also carries the same file as `document` (Bot API backward compatibility).
    const gif = file('gif', { width: 320, height: 240, mime_type: 'video/mp4', file_name: 'cat.gif.mp4', file_size: 1000 });
    expect(mediaOf({ animation: gif, document: gif })).toMatchObject({
      kind: 'animation',
      mimeType: 'video/mp4',
      fileName: 'cat.gif.mp4',
      declaredSize: 1000,
    });
    expect(mediaOf({ video: file('v'), animation: file('a') }).kind).toBe('video');
    expect(mediaOf({ audio: file('au', { mime_type: 'audio/mpeg', file_name: 'song.mp3' }) })).toMatchObject({
      kind: 'audio',
      fileName: 'song.mp3',
    });
    expect(mediaOf({ voice: file('vo', { mime_type: 'audio/ogg' }) })).toMatchObject({ kind: 'voice', mimeType: 'audio/ogg' });
    expect(mediaOf({ video_note: file('vn', { length: 240 }) })).toMatchObject({
      kind: 'video_note',
      telegramFile: { width: 240, height: 240 },
    });
    expect(mediaOf({ sticker: file('st', { width: 512, height: 512, type: 'regular' }) })).toMatchObject({
      kind: 'sticker',
      telegramFile: { width: 512, height: 512 },
    });
    expect(mediaOf({ photo: [file('p', { width: 1, height: 1 })], video: file('v') }).kind).toBe('photo');
  });

  it('keeps a pixel size beyond what a stored integer holds as unknown, as any unusable descriptive field', () => {
    const huge = 2 ** 31;
    expect(mediaOf({ photo: [file('p', { width: huge, height: 2 ** 31 - 1 })] }).telegramFile).toMatchObject({
      width: null,
      height: 2 ** 31 - 1,
    });
    expect(mediaOf({ video: file('v', { width: 640, height: huge }) }).telegramFile).toMatchObject({ width: 640, height: null });
    expect(mediaOf({ video_note: file('vn', { length: huge }) }).telegramFile).toMatchObject({ width: null, height: null });
  });

  it('ignores a message with neither media nor text that albumflow keeps', () => {
    const nothingKept = [
      { location: { latitude: 1, longitude: 2 } },
      { poll: { id: 'p' } },
      { paid_media: { star_count: 1 } },
      { new_chat_members: [{ id: 1, is_bot: false, first_name: 'Bob' }] },
      { text: '' },
    ];
    for (const message of nothingKept) {
      expect(parse(photoUpdate({ photo: undefined, ...message }))).toMatchObject({ kind: 'ignored', reason: 'no_content' });
    }
    // A live location moves by edits: each is recorded and ignored too.
    expect(
      parse(photoUpdate({ photo: undefined, location: { latitude: 1, longitude: 2 }, edit_date: 1790676100 }, {}, 'edited_message')),
    ).toMatchObject({
      kind: 'ignored',
      reason: 'no_content',
    });
  });

  it('keeps the text or caption of a message without media it keeps, as a child without attachments', () => {
    expect(child(parse(photoUpdate({ photo: undefined, text: 'hi' })))).toMatchObject({ caption: 'hi', attachments: [] });
    expect(child(parse(photoUpdate({ photo: undefined, paid_media: { star_count: 1 }, caption: 'for a star' })))).toMatchObject({
      caption: 'for a star',
      attachments: [],
    });
  });

  it('keeps descriptive fields of the wrong type as unknown', () => {
    const video = file('v', { width: '1920', height: -1, mime_type: 7, file_name: '', file_size: 2 ** 53 });
    expect(mediaOf({ video })).toEqual({
      position: 0,
      kind: 'video',
      url: null,
      mimeType: null,
      declaredSize: null,
      fileName: null,
      telegramFile: { fileId: 'f-v', fileUniqueId: 'u-v', width: null, height: null },
      lineChannel: null,
    });
  });

  it('takes the caption from caption, else from text', () => {
    expect(child(parse(photoUpdate({ caption: 'c', text: 't' }))).caption).toBe('c');
    expect(child(parse(photoUpdate({ caption: '', text: 't' }))).caption).toBe('t');
    expect(child(parse(photoUpdate({ caption: 5 }))).caption).toBeNull();
  });

  it('keeps date only when it is a positive Unix time', () => {
    for (const date of [0, -5, 1.5, '1790676000', 2 ** 53, null])
      expect(child(parse(photoUpdate({ date }))).sentAt, String(date)).toBeNull();
    expect(child(parse(photoUpdate({ date: 1 }))).sentAt).toBe('1970-01-01T00:00:01.000Z');
  });
});

/** `value` with fields no Bot API version albumflow reads has, in every object at every level. */
function withFutureFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withFutureFields);
  if (typeof value !== 'object' || value === null) return value;
  const copy = Object.fromEntries(Object.entries(value).map(([key, field]) => [key, withFutureFields(field)]));
  return { ...copy, future_field: { nested: [1, 'two', { deeper: true }] }, future_flag: true };
}

describe('parseUpdate: Bot API 10.x', () => {
  const scope = { workspace, provider: 'telegram', accountId: botId };

  it('a live photo is one attachment of kind live_photo: the video, with the largest size of its still', () => {
    const [live, photo] = children('live-photo-album') as [ChildMessage, ChildMessage];
    const message = fixture('live-photo-album')[0]!.message as {
      live_photo: { file_id: string; file_unique_id: string; photo: Array<{ file_id: string; file_unique_id: string }> };
    };
    expect(onlyAttachment(live)).toEqual({
      position: 0,
      kind: 'live_photo',
      url: null,
      mimeType: 'video/mp4',
      declaredSize: 2_097_152,
      fileName: null,
      telegramFile: {
        fileId: message.live_photo.file_id,
        fileUniqueId: message.live_photo.file_unique_id,
        width: 1080,
        height: 1440,
        still: { fileId: message.live_photo.photo[1]!.file_id, fileUniqueId: message.live_photo.photo[1]!.file_unique_id },
      },
      lineChannel: null,
    });
    expect([live.caption, live.albumKey]).toEqual(['The wave, live', photo.albumKey]);
    expect(onlyAttachment(photo)).toMatchObject({ kind: 'photo', telegramFile: { width: 1280, height: 960 } });
    expect(onlyAttachment(photo).telegramFile).not.toHaveProperty('still');
  });

  it('takes the still from the message’s photo when the live photo carries none, and keeps a live photo without any still', () => {
    const video = { file_id: 'f-live', file_unique_id: 'u-live', width: 720, height: 960, duration: 2 };
    const sizes = [
      { file_id: 'f-big', file_unique_id: 'u-big', width: 720, height: 960 },
      { file_id: 'f-small', file_unique_id: 'u-small', width: 72, height: 96 },
    ];
    const fromMessage = onlyAttachment(child(parse(photoUpdate({ live_photo: video, photo: sizes }))));
    expect(fromMessage).toMatchObject({
      kind: 'live_photo',
      telegramFile: { fileId: 'f-live', still: { fileId: 'f-big', fileUniqueId: 'u-big' } },
    });
    const bare = onlyAttachment(child(parse(photoUpdate({ live_photo: video, photo: undefined }))));
    expect([bare.kind, bare.telegramFile?.fileId, bare.telegramFile?.still]).toEqual(['live_photo', 'f-live', undefined]);
    expect(parse(photoUpdate({ live_photo: { file_unique_id: 'u' } }))).toMatchObject({
      code: 'invalid_update',
      message: 'message.live_photo.file_id must be a non-empty string',
    });
  });

  it('paid media is one child with an attachment per item, in order; a preview has nothing to download', () => {
    const [update] = fixture('paid-media');
    const items = (
      update!.channel_post as { paid_media: { paid_media: Array<{ photo?: Array<{ file_id: string }>; video?: { file_id: string } }> } }
    ).paid_media.paid_media;
    const paid = child(parse(update));
    expect(paid.key).toEqual({ ...scope, conversationId: '-1001987654321', messageId: '701' });
    expect([paid.caption, paid.albumKey]).toEqual(['Sunrise set (50 stars)', null]);
    expect(paid.attachments).toEqual([
      {
        position: 0,
        kind: 'photo',
        url: null,
        mimeType: null,
        declaredSize: 153_412,
        fileName: null,
        telegramFile: { fileId: items[0]!.photo![1]!.file_id, fileUniqueId: 'AQADPaid701p', width: 1280, height: 960 },
        lineChannel: null,
      },
      {
        position: 1,
        kind: 'video',
        url: null,
        mimeType: 'video/mp4',
        declaredSize: 3_145_728,
        fileName: 'sunrise.mp4',
        telegramFile: { fileId: items[1]!.video!.file_id, fileUniqueId: 'AgADPaid701v', width: 1920, height: 1080 },
        lineChannel: null,
      },
      {
        position: 2,
        kind: 'preview',
        url: null,
        mimeType: null,
        declaredSize: null,
        fileName: null,
        telegramFile: null,
        lineChannel: null,
      },
    ]);
  });

  it('paid media: a live photo item is a live photo; an item of a type albumflow does not know is kept as one with nothing to download', () => {
    const items = [
      {
        type: 'live_photo',
        live_photo: { file_id: 'f-lp', file_unique_id: 'u-lp', width: 1, height: 1, photo: [{ file_id: 'f-s', file_unique_id: 'u-s' }] },
      },
      { type: 'hologram', hologram: { file_id: 'f-h', file_unique_id: 'u-h' } },
      { type: 'Not A Name!' },
    ];
    const paid = child(parse(photoUpdate({ photo: undefined, paid_media: { star_count: 1, paid_media: items } })));
    expect(
      paid.attachments.map((a) => [a.position, a.kind, a.telegramFile?.fileId ?? null, a.telegramFile?.still?.fileId ?? null]),
    ).toEqual([
      [0, 'live_photo', 'f-lp', 'f-s'],
      [1, 'hologram', null, null],
      [2, null, null, null],
    ]);
    expect(parse(photoUpdate({ photo: undefined, paid_media: { star_count: 1, paid_media: 'x' } }))).toMatchObject({
      code: 'invalid_update',
      message: 'message.paid_media.paid_media must be a list of PaidMedia objects',
    });
    expect(
      parse(photoUpdate({ photo: undefined, paid_media: { paid_media: [{ type: 'video', video: { file_id: 'f' } }] } })),
    ).toMatchObject({
      code: 'invalid_update',
      message: 'message.paid_media.paid_media[0].video.file_unique_id must be a non-empty string',
    });
  });

  it('deleted_business_messages names the children it withdraws, in the business chat', () => {
    const [update] = fixture('deleted-business-messages');
    const conversationId = 'AbCdEfGhIjKlMnOp_123:555000111';
    expect(parse(update)).toEqual({
      kind: 'deleted',
      eventId: `${botId}:810000403`,
      type: 'deleted_business_messages',
      keys: [
        { ...scope, conversationId, messageId: '102' },
        { ...scope, conversationId, messageId: '109' },
      ],
    });
    // The same chat as the business messages it deletes.
    expect(child(parse(fixture('business-album')[1])).key).toEqual({ ...scope, conversationId, messageId: '102' });
    expect(readUpdateTypes).toContain('deleted_business_messages');
  });

  it('refuses a deleted_business_messages whose identities are missing or unusable', () => {
    const deletion = (fields: Record<string, unknown>) => ({
      update_id: 5,
      deleted_business_messages: { business_connection_id: 'bc', chat: { id: 42, type: 'private' }, message_ids: [1], ...fields },
    });
    expect(parse(deletion({ business_connection_id: undefined }))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: deleted_business_messages.business_connection_id',
    });
    expect(parse(deletion({ message_ids: undefined }))).toMatchObject({ code: 'missing_identity' });
    expect(parse(deletion({ chat: { id: '42' } }))).toMatchObject({ code: 'invalid_identity' });
    expect(parse(deletion({ message_ids: [1, '2'] }))).toEqual({
      kind: 'rejected',
      code: 'invalid_identity',
      message: 'deleted_business_messages.message_ids[1] must be a non-negative integer below 2^53',
    });
    expect(parse(deletion({ business_connection_id: 'b'.repeat(maxWorkflowIdLength) }))).toMatchObject({ code: 'invalid_identity' });
    expect(parse(deletion({ message_ids: [] }))).toMatchObject({ kind: 'deleted', keys: [] });
    expect(parse({ ...deletion({}), business_message: photoUpdate().message })).toMatchObject({ code: 'invalid_update' });
  });

  it('fields of a newer Bot API, at every level, change nothing and are never a reason to refuse', () => {
    const names = fs.readdirSync(path.join(projectRoot, 'test/fixtures/telegram')).map((file) => file.replace(/\.json$/, ''));
    expect(names).toEqual(expect.arrayContaining(['live-photo-album', 'paid-media', 'deleted-business-messages']));
    for (const name of names) {
      for (const update of fixture(name)) {
        const parsed = parse(update);
        expect(parsed.kind, `${name} ${update.update_id}`).not.toBe('rejected');
        expect(parse(withFutureFields(update)), `${name} ${update.update_id}`).toEqual(parsed);
      }
    }
  });
});

describe('parseUpdate: bodies that are not a Telegram Update', () => {
  it.each([
    ['not JSON', '{"update_id":', 'invalid_json'],
    ['empty', '', 'invalid_json'],
    ['a list', '[]', 'invalid_update'],
    ['a string', '"message"', 'invalid_update'],
    ['no update_id', '{"message":{}}', 'invalid_update'],
    ['update_id as text', '{"update_id":"1"}', 'invalid_update'],
    ['negative update_id', '{"update_id":-1}', 'invalid_update'],
    ['fractional update_id', '{"update_id":1.5}', 'invalid_update'],
    ['huge update_id', '{"update_id":12345678901234567890}', 'invalid_update'],
    ['two messages', JSON.stringify({ ...photoUpdate(), edited_message: photoUpdate().message }), 'invalid_update'],
    ['message not an object', '{"update_id":1,"message":[1]}', 'invalid_update'],
    ['message null', '{"update_id":1,"message":null}', 'invalid_update'],
  ])('%s → %s', (_name, text, code) => {
    const parsed = rejection(parseUpdate(workspace, botId, body(text)));
    expect(parsed.code).toBe(code);
    expect(parsed.message).not.toBe('');
  });

  it('names the missing or unusable identity', () => {
    expect(parse(photoUpdate({ chat: undefined }))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: message.chat.id',
    });
    expect(parse(photoUpdate({ message_id: undefined }))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: message.message_id',
    });
    expect(parse(photoUpdate({}, {}, 'business_message'))).toEqual({
      kind: 'rejected',
      code: 'missing_identity',
      message: 'missing child identity: business_message.business_connection_id',
    });
    for (const message of [
      { chat: { id: '42' } },
      { chat: { id: 1.5 } },
      { chat: 42 },
      { message_id: '10' },
      { message_id: -3 },
      { message_id: 2 ** 53 },
      { business_connection_id: 7 },
      { business_connection_id: '' },
      { media_group_id: 12345 },
      { media_group_id: '' },
    ]) {
      const parsed = rejection(parse(photoUpdate(message)));
      expect(parsed.code === 'invalid_identity' || parsed.code === 'missing_identity', JSON.stringify(message)).toBe(true);
    }
    expect(
      rejection(
        parseUpdate(workspace, botId, body('{"update_id":1,"message":{"message_id":1,"chat":{"id":92233720368547758070},"photo":[]}}')),
      ).code,
    ).toBe('invalid_identity');
  });

  it('refuses an identity too long for a workflow id', () => {
    expect(parse(photoUpdate({ business_connection_id: 'b'.repeat(maxWorkflowIdLength) }))).toMatchObject({ code: 'invalid_identity' });
    expect(parse(photoUpdate({ media_group_id: 'é'.repeat(200) }))).toMatchObject({ code: 'invalid_identity' });
  });

  it('refuses media without a file id, naming the field', () => {
    expect(parse(photoUpdate({ photo: [{ file_unique_id: 'u', width: 1, height: 1 }] }))).toEqual({
      kind: 'rejected',
      code: 'invalid_update',
      message: 'message.photo[0].file_id must be a non-empty string',
    });
    expect(parse(photoUpdate({ photo: [] }))).toMatchObject({ code: 'invalid_update', message: 'message.photo must not be empty' });
    expect(parse(photoUpdate({ photo: { file_id: 'f' } }))).toMatchObject({ code: 'invalid_update' });
    expect(parse(photoUpdate({ photo: ['x'] }))).toMatchObject({ code: 'invalid_update' });
    expect(parse(photoUpdate({ photo: undefined, video: 'v' }))).toMatchObject({
      code: 'invalid_update',
      message: 'message.video must be an object',
    });
    expect(parse(photoUpdate({ photo: undefined, document: { file_id: 'f', file_unique_id: 5 } }))).toMatchObject({
      message: 'message.document.file_unique_id must be a non-empty string',
    });
  });

  it('refuses text PostgreSQL cannot store, and deep nesting', () => {
    expect(parse(photoUpdate({ caption: 'a\u0000b' }))).toMatchObject({ kind: 'rejected', code: 'unstorable_update' });
    expect(parseUpdate(workspace, botId, body('{"update_id":1,"message":{"\\ud800":1}}'))).toMatchObject({ code: 'unstorable_update' });
    expect(child(parse(photoUpdate({ caption: 'emoji \ud83d\ude00 ok' }))).caption).toBe('emoji \ud83d\ude00 ok');
    const deep = `{"update_id":1,"x":${'['.repeat(maxNestingDepth)}${']'.repeat(maxNestingDepth)}}`;
    expect(parseUpdate(workspace, botId, body(deep))).toMatchObject({
      code: 'invalid_update',
      message: `the update nests deeper than ${maxNestingDepth} levels`,
    });
  });

  it('ignores a message Telegram has not sent yet (message_id 0): it has no identity', () => {
    expect(parse(photoUpdate({ message_id: 0 }))).toEqual({
      kind: 'ignored',
      eventId: `${botId}:1`,
      type: 'message',
      reason: 'unsent_message',
    });
  });
});

describe('parseUpdate: properties', () => {
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  /** Mostly the documented type, sometimes any JSON value. */
  const maybe = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: anyJson });
  const fileLike = fc.record(
    {
      file_id: maybe(fc.string({ minLength: 1 })),
      file_unique_id: maybe(fc.string({ minLength: 1 })),
      width: maybe(fc.nat()),
      height: maybe(fc.nat()),
      length: maybe(fc.nat()),
      file_size: maybe(fc.nat()),
      mime_type: maybe(fc.string()),
      file_name: maybe(fc.string()),
    },
    { requiredKeys: ['file_id', 'file_unique_id'] },
  );
  const messageLike = fc.record(
    {
      message_id: maybe(fc.nat()),
      chat: maybe(
        fc.record(
          { id: maybe(fc.oneof(fc.integer(), fc.double())), type: fc.constantFrom('private', 'group', 'channel') },
          { requiredKeys: ['id'] },
        ),
      ),
      date: maybe(fc.integer()),
      edit_date: maybe(fc.integer()),
      business_connection_id: maybe(fc.string()),
      media_group_id: maybe(fc.string()),
      caption: maybe(fc.string({ unit: 'binary' })),
      text: maybe(fc.string()),
      photo: maybe(fc.array(maybe(fileLike), { maxLength: 4 })),
      video: maybe(fileLike),
      animation: maybe(fileLike),
      document: maybe(fileLike),
      audio: maybe(fileLike),
      voice: maybe(fileLike),
      video_note: maybe(fileLike),
      sticker: maybe(fileLike),
      live_photo: maybe(fileLike.map((file) => ({ ...file, photo: [file] }))),
      paid_media: maybe(
        fc.record({
          star_count: fc.nat(),
          paid_media: fc.array(
            fc.oneof(
              fileLike.map((video) => ({ type: 'video', video })),
              fc.array(fileLike, { minLength: 1, maxLength: 2 }).map((photo) => ({ type: 'photo', photo })),
              fc.record({ type: fc.constantFrom('preview', 'some_future_media'), width: fc.nat() }),
            ),
            { maxLength: 10 },
          ),
        }),
      ),
      // What a deleted_business_messages update holds beside business_connection_id and chat.
      message_ids: maybe(fc.array(maybe(fc.nat()), { maxLength: 3 })),
    },
    { requiredKeys: ['message_id', 'chat'] },
  );
  const updateLike = fc
    .tuple(
      maybe(fc.nat()),
      fc.constantFrom(...readUpdateTypes, 'callback_query'),
      maybe(messageLike),
      fc.dictionary(fc.string(), anyJson, { maxKeys: 2 }),
    )
    .map(([updateId, type, message, extra]) => ({ ...extra, update_id: updateId, [type]: message }));
  const anyBody = fc.oneof(
    { weight: 8, arbitrary: updateLike.map((update) => body(update)) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary' }).map((text) => Buffer.from(text)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
  );

  it('never throws, and answers a rejection with a message or a well-formed result', () => {
    const kinds = new Set<string>();
    fc.assert(
      fc.property(anyBody, fc.string({ minLength: 1 }), (raw, bot) => {
        const parsed = parseUpdate(workspace, bot, raw);
        kinds.add(parsed.kind);
        expect(['child', 'edit', 'deleted', 'ignored', 'rejected']).toContain(parsed.kind);
        if (parsed.kind === 'rejected') expect(parsed.message.length).toBeGreaterThan(0);
        if (parsed.kind === 'deleted') {
          for (const key of parsed.keys) expect(key).toMatchObject({ workspace, provider: 'telegram', accountId: bot });
        }
        if (parsed.kind === 'child' || parsed.kind === 'edit') {
          // Attachments (one, or one per item of paid media), or none and a text: nothing else makes a child.
          if (parsed.child.attachments.length === 0) expect(typeof parsed.child.caption).toBe('string');
          expect(parsed.child.attachments.map((a) => a.position)).toEqual(parsed.child.attachments.map((_, i) => i));
          expect(parsed.child.key).toMatchObject({ workspace, provider: 'telegram', accountId: bot });
          expect(parsed.eventId.startsWith(`${bot}:`)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
    // The generator reaches every outcome, so the property says something about each.
    expect([...kinds].sort()).toEqual(['child', 'deleted', 'edit', 'ignored', 'rejected']);
  });

  it('identical bodies give identical results', () => {
    fc.assert(
      fc.property(anyBody, (raw) => {
        expect(parseUpdate(workspace, botId, Buffer.from(raw))).toEqual(parseUpdate(workspace, botId, Buffer.from(raw)));
      }),
    );
  });

  it('the scoped identities never mix two bots, two chats or a business chat with a bot chat', () => {
    const origin = fc.record({
      bot: fc.constantFrom('7000000001', '7000000002'),
      chat: fc.constantFrom(42, -42, -1001234567890),
      connection: fc.constantFrom(undefined, 'bc1', 'bc1:42'),
      messageId: fc.integer({ min: 1, max: 3 }),
      group: fc.constantFrom('g1', 'g2'),
    });
    const parsedChild = (o: { bot: string; chat: number; connection: string | undefined; messageId: number; group: string }) =>
      child(
        parse(
          photoUpdate({ chat: { id: o.chat }, business_connection_id: o.connection, message_id: o.messageId, media_group_id: o.group }),
          o.bot,
        ),
      );
    fc.assert(
      fc.property(origin, origin, (a, b) => {
        const [ca, cb] = [parsedChild(a), parsedChild(b)];
        const sameConversation = a.bot === b.bot && a.chat === b.chat && a.connection === b.connection;
        expect(childKeyString(ca.key) === childKeyString(cb.key)).toBe(sameConversation && a.messageId === b.messageId);
        expect(albumWorkflowId(ca.albumKey!) === albumWorkflowId(cb.albumKey!)).toBe(sameConversation && a.group === b.group);
      }),
    );
  });
});

describe('parseUpdate with a horizon', () => {
  const horizonS = 1790676000;
  const parseBefore = (update: unknown) => parseUpdate(workspace, botId, body(update), horizonS * 1000);

  it('makes a message whose date is before the horizon too_old; an edit by its edit_date, else its date', () => {
    expect(parseBefore(photoUpdate({ date: horizonS - 1 }))).toEqual({ kind: 'too_old', eventId: `${botId}:1`, type: 'message' });
    expect(parseBefore(photoUpdate({ date: horizonS - 1 }, {}, 'channel_post'))).toMatchObject({ kind: 'too_old' });
    expect(parseBefore(photoUpdate({ date: horizonS }))).toMatchObject({ kind: 'child' });
    // An old message edited recently is a new version of it; edited before the horizon, it is too old.
    expect(parseBefore(photoUpdate({ date: horizonS - 3600, edit_date: horizonS }, {}, 'edited_message'))).toMatchObject({ kind: 'edit' });
    expect(parseBefore(photoUpdate({ date: horizonS - 3600, edit_date: horizonS - 1 }, {}, 'edited_message'))).toMatchObject({
      kind: 'too_old',
      type: 'edited_message',
    });
    expect(parseBefore(photoUpdate({ date: horizonS - 1, edit_date: 'later' }, {}, 'edited_message'))).toMatchObject({ kind: 'too_old' });
    // Without a usable date the message is taken as recent.
    expect(parseBefore(photoUpdate({ date: 'today' }))).toMatchObject({ kind: 'child' });
  });

  it('takes updates without a message as recent: another update type, a deletion of business messages', () => {
    expect(parseBefore({ update_id: 1, callback_query: { id: 'q', data: 'x' } })).toMatchObject({ kind: 'ignored' });
    const deletion = { update_id: 2, deleted_business_messages: { business_connection_id: 'bc', chat: { id: 42 }, message_ids: [10] } };
    expect(parseBefore(deletion)).toMatchObject({ kind: 'deleted' });
  });
});

describe('updateTimes', () => {
  it("moves every date and edit_date of a file's Updates by one amount so that the latest is now", () => {
    const updates = [photoUpdate({ date: 100 }), photoUpdate({ date: 100, edit_date: 160 }, {}, 'edited_message'), { update_id: 3 }];
    moveTimesToNow(updates, updateTimes, 1_000_000);
    expect(updates.map((update) => Object.values(update).find((value) => typeof value === 'object'))).toEqual([
      expect.objectContaining({ date: 940 }),
      expect.objectContaining({ date: 940, edit_date: 1000 }),
      undefined,
    ]);
  });
});
