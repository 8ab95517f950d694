import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AttachmentDetails } from '../../src/db/console.js';
import type { AlbumView } from '../../src/domain/types.js';
import { albumPageModel } from '../../src/ui/album-page.js';
import { consolePaths } from '../../src/ui/paths.js';
import { tenantsPagePaths } from '../../src/ui/tenants-page.js';
import { renderPage, templatesDir } from '../../src/ui/views.js';
import type { WorkspaceInfo } from '../../src/tenants/schemas.js';

const hostile = '<img src=x onerror=alert(1)>"\'&';
const escaped = '&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;';

function album(overrides: Partial<AlbumView> = {}): AlbumView {
  return {
    workflowId: `album:${hostile}`,
    key: { workspace: hostile, provider: hostile, accountId: hostile, conversationId: hostile, albumId: hostile },
    state: 'processed',
    expectedTotal: null,
    distinctChildren: 2,
    expectedCountReached: false,
    review: { required: true, reasons: ['late_item'] },
    children: [
      {
        messageId: 'm1',
        index: 0,
        total: null,
        caption: hostile,
        sentAt: '2026-09-29T10:00:00.000Z',
        receivedAt: '2026-09-29T10:00:01.000Z',
        attachments: [{ position: 0, status: 'failed', contentType: null, bytes: null, sha256: null, error: hostile }],
        history: [],
      },
      {
        messageId: hostile,
        index: { weird: hostile },
        total: null,
        caption: null,
        sentAt: null,
        receivedAt: '2026-09-29T10:05:00.000Z',
        attachments: [{ position: 0, status: 'downloaded', contentType: 'image/jpeg', bytes: 2048, sha256: 'a'.repeat(64), error: null }],
        history: [],
      },
    ],
    decisions: [
      { seq: 1, trigger: 'quiet_period', childMessageIds: ['m1'], decidedAt: '2026-09-29T10:00:03.000Z' },
      { seq: 2, trigger: 'late_item', childMessageIds: ['m1', hostile], decidedAt: '2026-09-29T10:05:01.000Z' },
    ],
    media: { total: 2, pending: 0, downloaded: 1, failed: 1, expired: 0, unavailable: 0 },
    ...overrides,
  };
}

function renderAlbum(
  status: AlbumView,
  details: AttachmentDetails[] = [
    { messageId: hostile, position: 0, kind: 'image', fileName: hostile, declaredMimeType: 'image/jpeg', stillSha256: null },
  ],
): string {
  const model = albumPageModel({
    album: status,
    details,
    version: 'v1',
    pollMs: 2000,
    temporalUi: { url: 'http://127.0.0.1:8233', namespace: 'default' },
  });
  return renderPage('album', { title: 'Album', signedIn: true }, model);
}

describe('console pages', () => {
  it('escape every sender-controlled string (ids, captions, file names, errors, metadata as received)', () => {
    const page = renderAlbum(album());
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain(hostile);
    // caption, error, file name, message id, index as received: each shown as text
    expect(page.split(escaped).length - 1).toBeGreaterThanOrEqual(6);
    expect(page).toContain(`{&quot;weird&quot;:&quot;${escaped.replaceAll('&quot;', '\\&quot;')}&quot;}`);
  });

  it('put sender-controlled ids into links only URL-encoded, under the console’s own paths', () => {
    const key = album().key;
    expect(consolePaths.album(key)).toBe(`/ui/albums/${Array(5).fill(encodeURIComponent(hostile)).join('/')}`);
    expect(consolePaths.action({ ...key, workspace: 'ws/1' }, 'retry-downloads')).toMatch(
      /^\/workspaces\/ws%2F1\/albums\/[^/]+\/[^/]+\/[^/]+\/[^/]+\/actions\/retry-downloads$/,
    );
    expect(renderAlbum(album())).toContain(
      `href="http://127.0.0.1:8233/namespaces/default/workflows/${encodeURIComponent(`album:${hostile}`).replaceAll("'", '&#39;')}"`,
    );
  });

  it('use raw output only for what another template rendered', () => {
    for (const file of fs.readdirSync(templatesDir)) {
      const raw = fs.readFileSync(`${templatesDir}/${file}`, 'utf8').match(/<%~[^%]*%>/g) ?? [];
      expect(
        raw.every((tag) => tag === '<%~ it.body %>'),
        `${file}: ${raw.join(' ')}`,
      ).toBe(true);
    }
  });

  it('mark late items, the children each decision added, and the review reasons', () => {
    const page = renderAlbum(album());
    expect(page).toMatch(/<tr data-message="&lt;img[^"]*" class=late>/);
    expect(page).toContain('<span class="badge late">late item</span>');
    expect(page).toMatch(/<li data-seq="2" data-trigger="late_item" class=late>/);
    expect(page).toContain(`<li class=new>${escaped}</li>`);
    expect(page).toContain('<li data-reason="late_item">');
  });

  it('show a child’s earlier captions when it was edited, and no history slot otherwise', () => {
    expect(renderAlbum(album())).not.toContain('class="edits"');
    const edited = album();
    edited.children[0]!.history = [
      { caption: `old ${hostile}`, mediaReplaced: false, replacedAt: '2026-09-29T10:01:00.000Z', recordedAt: '2026-09-29T10:01:00.100Z' },
    ];
    const page = renderAlbum(edited);
    expect(page).toContain('<summary>edited 1 time</summary>');
    expect(page).toContain(`<q class="caption">old ${escaped}</q>`);
  });

  it('show a live photo as its video, with its still as the thumbnail', () => {
    const [video, still] = ['b'.repeat(64), 'c'.repeat(64)];
    const live = album();
    live.children[1]!.attachments = [
      { position: 0, status: 'downloaded', contentType: 'video/mp4', bytes: 4096, sha256: video, error: null },
    ];
    const page = renderAlbum(live, [
      { messageId: hostile, position: 0, kind: 'live_photo', fileName: null, declaredMimeType: 'video/mp4', stillSha256: still },
    ]);
    const workspace = encodeURIComponent(hostile).replaceAll("'", '&#39;');
    expect(page).toContain(`<img class="thumbnail" src="/workspaces/${workspace}/media/${still}/thumbnail"`);
    expect(page).toContain(`<a href="/workspaces/${workspace}/media/${video}" target="_blank" rel="noopener" class="play">play video</a>`);
    expect(page).not.toContain(`media/${video}/thumbnail`);
  });

  it('offer “Resolve review” only on an album that needs one', () => {
    expect(renderAlbum(album())).toContain('>Resolve review</button>');
    expect(renderAlbum(album({ review: { required: false, reasons: [] } }))).not.toContain('Resolve review');
    const resolved = album({
      review: { required: false, reasons: ['late_item'], resolved: { at: '2026-09-29T10:06:00.000Z', note: 'fine' } },
    });
    expect(renderAlbum(resolved)).toContain('review resolved');
    expect(renderAlbum(resolved)).not.toContain('>Resolve review</button>');
  });

  it('say per route what a workspace takes on the Tenants page', () => {
    const workspace = (name: string, fields: Partial<WorkspaceInfo>): WorkspaceInfo => ({
      name,
      source: 'environment',
      createdAt: null,
      unifyport: true,
      secrets: [],
      telegramBots: [],
      lineChannels: [],
      ...fields,
    });
    const page = renderPage(
      'tenants',
      { title: 'Tenants', signedIn: true },
      {
        workspaces: [
          workspace('bots-only', {
            unifyport: false,
            telegramBots: [{ name: 'sales', botId: '7000000001', source: 'environment', createdAt: null }],
          }),
          workspace('open', {}),
          workspace('runtime', { source: 'database', createdAt: '2026-09-29T10:00:00.000Z' }),
        ],
        tokens: [],
        audit: [],
        paths: tenantsPagePaths,
        message: null,
        error: null,
        createdToken: null,
      },
    );
    const section = (name: string) => page.slice(page.indexOf(`<h3>${name} `), page.indexOf('</article>', page.indexOf(`<h3>${name} `)));
    expect(section('bots-only')).toContain('UnifyPort webhooks: not served (answered 404)');
    expect(section('bots-only')).not.toContain('unsigned');
    expect(section('bots-only')).toContain('sales (bot id 7000000001');
    expect(section('open')).toContain('WORKSPACE_SECRETS lists it with none: unsigned UnifyPort webhooks accepted');
    expect(section('runtime')).toContain('its UnifyPort webhooks are refused until it has one');
  });

  it('follow a closed album no more: its page carries no live-update URL', () => {
    expect(renderAlbum(album())).toContain('data-live-url=');
    expect(renderAlbum(album({ state: 'closed' }))).not.toContain('data-live-url=');
  });
});
