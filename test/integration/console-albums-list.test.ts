import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { buildApp, type App } from '../../src/process/app.js';
import { albumWorkflowId } from '../../src/domain/keys.js';
import { testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

const workspace = unique('ws-pages');
const otherWorkspace = unique('ws-pages-other');
const token = unique('token-for-the-pages');
const albumCount = 240;

/** Album `i` of `workspace`, with properties every filter splits differently. */
function album(i: number) {
  return {
    albumId: `w-${String(i).padStart(3, '0')}`,
    provider: i % 3 === 0 ? 'telegram' : 'whatsapp',
    state: (['processed', 'processed', 'collecting', 'closed'] as const)[i % 4]!,
    needsReview: i % 2 === 1,
    resolved: i % 2 === 1 && i % 7 === 0,
  };
}

type Album = ReturnType<typeof album>;

let pool: Pool;
let temporal: Client;
let app: App;
/** Album ids of both workspaces, oldest first. */
const inserted: Array<{ albumId: string; workspace: string; album?: Album }> = [];

beforeAll(async () => {
  const config = testConfig();
  pool = testPool(config);
  temporal = await testClient(config);
  app = await buildApp({
    config,
    pool,
    temporal,
    wakeDispatcher: () => undefined,
    logger: testLogger(config),
    tokens: new Map([[token, [workspace, otherWorkspace]]]),
  });
  // One at a time, so the ids (which order the list) follow this loop; the other workspace's albums come in between.
  for (let i = 0; i < albumCount; i++) {
    const a = album(i);
    await insertAlbum(workspace, a.albumId, a);
    inserted.push({ albumId: a.albumId, workspace, album: a });
    if (i % 40 === 20) {
      const albumId = `o-${i}`;
      await insertAlbum(otherWorkspace, albumId, { provider: 'whatsapp', state: 'processed', needsReview: true, resolved: false });
      inserted.push({ albumId, workspace: otherWorkspace });
    }
  }
});

afterAll(async () => {
  await app?.close();
  await temporal?.connection.close();
  await pool?.end();
});

async function insertAlbum(ws: string, albumId: string, a: Pick<Album, 'provider' | 'state' | 'needsReview' | 'resolved'>): Promise<void> {
  const key = { workspace: ws, provider: a.provider, accountId: 'acc_1', conversationId: 'conv_1', albumId };
  await pool.query(
    `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id, state, review_reasons, review_resolved_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      ws,
      a.provider,
      key.accountId,
      key.conversationId,
      albumId,
      albumWorkflowId(key),
      a.state,
      a.needsReview ? ['late_item'] : [],
      a.resolved ? new Date() : null,
    ],
  );
}

interface Page {
  albumIds: string[];
  /** The "Older albums" link, as a browser would follow it. */
  older: string | null;
}

function pageOf(html: string): Page {
  const albumIds = [...html.matchAll(/<tr data-album="([^"]*)">/g)].map((match) => match[1]!);
  const older = /<a href="([^"]*)" rel="next">Older albums/.exec(html)?.[1]?.replaceAll('&amp;', '&') ?? null;
  return { albumIds, older };
}

/** Follows "Older albums" from `url` to the last page; each page's albums and its link. */
async function walk(url: string): Promise<Page[]> {
  const pages: Page[] = [];
  for (let next: string | null = url; next !== null;) {
    const response = await app.inject({ method: 'GET', url: next, headers: { authorization: `Bearer ${token}`, accept: 'text/html' } });
    expect(response.statusCode, next).toBe(200);
    const page = pageOf(response.body);
    pages.push(page);
    next = page.older;
    expect(pages.length, 'a walk that never ends').toBeLessThan(20);
  }
  return pages;
}

/** Walks `pathname` with `filters`, checking that every page's link keeps both (and adds only `before`). */
async function walkFiltered(pathname: string, filters: Record<string, string>): Promise<Page[]> {
  const pages = await walk(`${pathname}?${new URLSearchParams(filters).toString()}`);
  for (const page of pages.slice(0, -1)) {
    const link = new URL(page.older!, 'http://x');
    expect(link.pathname).toBe(pathname);
    expect(Object.fromEntries([...link.searchParams].filter(([name]) => name !== 'before'))).toEqual(filters);
  }
  return pages;
}

/** The ids of `workspace`'s albums that `keep` selects, newest first. */
function expected(keep: (a: Album) => boolean): string[] {
  return inserted
    .filter((row) => row.album && keep(row.album))
    .map((row) => row.albumId)
    .reverse();
}

describe('the console’s albums list, page by page', () => {
  it('shows every album exactly once, newest first, 50 a page', async () => {
    const pages = await walkFiltered('/ui', { workspace });
    expect(pages.map((page) => page.albumIds.length)).toEqual([50, 50, 50, 50, 40]);
    expect(pages.flatMap((page) => page.albumIds)).toEqual(expected(() => true));
  });

  it('covers every workspace the token reaches when none is chosen', async () => {
    const pages = await walk('/ui');
    expect(pages.flatMap((page) => page.albumIds)).toEqual(inserted.map((row) => row.albumId).reverse());
  });

  it('keeps the filters on every page', async () => {
    const pages = await walkFiltered('/ui', { workspace, provider: 'whatsapp', state: 'processed' });
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flatMap((page) => page.albumIds)).toEqual(expected((a) => a.provider === 'whatsapp' && a.state === 'processed'));
  });

  it('pages the review queue the same way, without the albums whose review was resolved', async () => {
    const pages = await walkFiltered('/ui/review', { workspace, state: 'processed' });
    const ids = expected((a) => a.needsReview && !a.resolved && a.state === 'processed');
    expect(ids.length).toBeGreaterThan(50);
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flatMap((page) => page.albumIds)).toEqual(ids);
  });
});
