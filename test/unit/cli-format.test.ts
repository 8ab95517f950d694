import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { formatAlbum, formatAlbumList, formatMessage } from '../../src/cli/format.js';
import { shellQuoted, terminalJson, terminalText } from '../../src/common/terminal.js';
import type { AlbumListBody, MessageStatus } from '../../src/http/schemas.js';
import type { AlbumView } from '../../src/domain/types.js';

const key = { workspace: 'demo', provider: 'telegram', accountId: '7000000001', conversationId: '42' };
const child = {
  index: null,
  total: null,
  caption: 'day 1',
  sentAt: '2026-09-29T10:00:00.000Z',
  receivedAt: '2026-09-29T10:00:01.000Z',
  attachments: [],
  history: [
    { caption: 'draft', mediaReplaced: false, replacedAt: '2026-09-29T10:05:00.000Z', recordedAt: '2026-09-29T10:05:01.000Z' },
    { caption: null, mediaReplaced: true, replacedAt: '2026-09-29T10:06:00.000Z', recordedAt: '2026-09-29T10:06:01.000Z' },
  ],
};

describe('the CLI shows the earlier versions of an edited message', () => {
  it('lists each earlier caption with when it was replaced', () => {
    const message: MessageStatus = {
      ...child,
      workflowId: 'album:x',
      key: { ...key, messageId: '101' },
      albumKey: { ...key, albumId: 'g' },
      lastReceivedAt: child.receivedAt,
      deliveryCount: 1,
      decisions: [],
    };
    expect(formatMessage(message).split('\n').slice(3, 6)).toEqual([
      'caption:        day 1 (edited 2 times)',
      '  version 1:    draft (replaced 2026-09-29T10:05:00.000Z)',
      '  version 2:    - (replaced 2026-09-29T10:06:00.000Z, with its media)',
    ]);
  });

  it('marks an edited child in the album table', () => {
    const album: AlbumView = {
      workflowId: 'album:x',
      key: { ...key, albumId: 'g' },
      state: 'processed',
      expectedTotal: null,
      distinctChildren: 2,
      expectedCountReached: false,
      review: { required: false, reasons: [] },
      children: [
        { ...child, messageId: '101' },
        { ...child, messageId: '102', caption: null, history: [] },
      ],
      decisions: [],
      media: { total: 0, pending: 0, downloaded: 0, failed: 0, expired: 0, unavailable: 0 },
    };
    const rows = formatAlbum(album)
      .split('\n')
      .filter((line) => /^-\s+10[12]/.test(line));
    expect(rows.map((row) => row.split(/\s{2,}/).slice(1, 3))).toEqual([
      ['101', 'day 1 (edited 2 times)'],
      ['102', '-'],
    ]);
  });
});

/** Every character a terminal may act on but the line breaks the CLI writes itself. */
// eslint-disable-next-line no-control-regex
const actedOn = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('the CLI writes what senders wrote escaped, never as terminal controls', () => {
  const clear = '\x1b[2J\x1b[H';
  const link = '\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\';
  const hostile = `day 1${clear} ${link}\x07 fake\nline\r\tcsi\x9b31m del\x7f rlo\u202egpj.exe\u2066iso\u2069 sep\u2028x`;
  const albumKey = { ...key, albumId: `g${clear}` };

  const albumWith = (caption: string): AlbumView => ({
    workflowId: `album:demo:telegram:7000000001:42:g${clear}`,
    key: albumKey,
    state: 'processed',
    expectedTotal: 2,
    distinctChildren: 2,
    expectedCountReached: true,
    review: { required: true, reasons: ['late_item'], resolved: { at: '2026-09-29T11:00:00.000Z', note: `ok${link}\nforged` } },
    children: [
      {
        ...child,
        messageId: `101${link}`,
        caption,
        history: [],
        attachments: [{ position: 0, status: 'failed', error: `HTTP 500\r\n${clear}`, contentType: null, bytes: null, sha256: null }],
      },
      { ...child, messageId: '102', caption: 'fine', history: [] },
    ],
    decisions: [
      { seq: 1, trigger: 'expected_count_reached', decidedAt: '2026-09-29T10:01:00.000Z', childMessageIds: [`101${link}`, '102'] },
    ] as AlbumView['decisions'],
    media: { total: 1, pending: 0, downloaded: 0, failed: 1, expired: 0, unavailable: 0 },
  });

  it('escapes C0 and C1 controls, DEL, separators and bidi controls as \\x, \\u and \\n', () => {
    expect(terminalText(clear)).toBe('\\x1b[2J\\x1b[H');
    expect(terminalText(link)).toBe('\\x1b]8;;https://evil.example/\\x1b\\click here\\x1b]8;;\\x1b\\');
    expect(terminalText('a\nb\r\tc\x00\x07\x7f\x85\x9b\u2028\u202e\u2066')).toBe(
      'a\\nb\\r\\tc\\x00\\x07\\x7f\\x85\\x9b\\u2028\\u202e\\u2066',
    );
    expect(terminalText('plain, accents é, 中文, emoji 📷, a backslash \\ and RLM \u200f')).toBe(
      'plain, accents é, 中文, emoji 📷, a backslash \\ and RLM \u200f',
    );
    expect(terminalText(terminalText(hostile))).toBe(terminalText(hostile));
    expect(terminalText(hostile)).not.toMatch(actedOn);
    expect(terminalText(hostile)).not.toContain('\n');
  });

  it('keeps every cell and line of a status table free of controls, and the table its shape', () => {
    const printed = formatAlbum(albumWith(hostile));
    const plain = formatAlbum(albumWith('harmless'));
    expect(printed).not.toMatch(actedOn);
    expect(printed.split('\n')).toHaveLength(plain.split('\n').length);
    const lines = printed.split('\n');
    expect(lines[0]).toBe('Album g\\x1b[2J\\x1b[H  (telegram / account 7000000001 / conversation 42, workspace demo)');
    expect(lines).toContain(
      'review:         resolved at 2026-09-29T11:00:00.000Z (ok\\x1b]8;;https://evil.example/\\x1b\\click here\\x1b]8;;\\x1b\\\\nforged): late_item',
    );
    const header = lines.findIndex((line) => line.startsWith('index'));
    const row = lines[header + 2]!;
    expect(row).toContain(`101${terminalText(link)}`);
    expect(row).toContain(terminalText(hostile));
    expect(row).toContain('#0 failed (HTTP 500\\r\\n\\x1b[2J\\x1b[H)');
    // The columns line up as printed: the next row's cells start where this row's do.
    const next = lines[header + 3]!;
    expect(next.indexOf('fine')).toBe(row.indexOf(terminalText(hostile)));
  });

  it('does the same for a message, the album list and JSON, which parses back to what was sent', () => {
    const message: MessageStatus = {
      ...child,
      caption: hostile,
      history: [{ caption: `old${clear}\nversion`, mediaReplaced: false, replacedAt: '2026-09-29T10:05:00.000Z', recordedAt: 'x' }],
      workflowId: 'album:x',
      key: { ...key, messageId: `101${link}` },
      albumKey,
      lastReceivedAt: child.receivedAt,
      deliveryCount: 1,
      decisions: [],
    };
    const printed = formatMessage(message);
    expect(printed).not.toMatch(actedOn);
    expect(printed.split('\n')).toHaveLength(
      formatMessage({ ...message, caption: 'a', history: [{ ...message.history[0]!, caption: 'b' }] }).split('\n').length,
    );

    const list = formatAlbumList({
      items: [
        {
          key: albumKey,
          workflowId: 'album:x',
          state: 'processed',
          distinctChildren: 1,
          expectedTotal: null,
          firstReceivedAt: '2026-09-29T10:00:00.000Z',
          lastReceivedAt: '2026-09-29T10:00:00.000Z',
          review: { required: true, reasons: [`late${link}`] },
        },
      ],
      nextCursor: `c${clear}`,
    } as unknown as AlbumListBody);
    expect(list).not.toMatch(actedOn);
    expect(list.split('\n')).toHaveLength(5);

    const body = albumWith(hostile);
    const json = terminalJson(body);
    expect(json).not.toMatch(actedOn);
    expect(JSON.parse(json)).toEqual(body);
    expect(json.split('\n')).toHaveLength(JSON.stringify(body, null, 2).split('\n').length);
    expect(terminalJson(body, 0)).not.toContain('\n');
  });

  it('quotes a command word so that bash reads back exactly the id it was', () => {
    for (const id of ['album:demo:whatsapp:acc_1:conv_1:alb_1', "it's", `g${clear}\n${link}\u202e\\x41'"`]) {
      const quoted = shellQuoted(id);
      expect(quoted).not.toMatch(actedOn);
      expect(execFileSync('bash', ['-c', `printf %s ${quoted}`], { encoding: 'utf8' })).toBe(id);
    }
  });
});
