import { describe, expect, it } from 'vitest';
import { formatAlbum, formatMessage } from '../../src/cli/format.js';
import type { MessageStatus } from '../../src/http/schemas.js';
import type { AlbumStatus } from '../../workflows/types.js';

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
    const album: AlbumStatus = {
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
