import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/process/app.js';
import type { Pool } from '../../src/db/pool.js';
import { workspaceUsage, type WorkspaceUsage } from '../../src/db/usage.js';
import { albumWorkflowId, messageWorkflowId } from '../../src/domain/keys.js';
import type { AlbumKey, MessageKey } from '../../src/domain/types.js';
import { freshDatabase, testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

// A workspace name that needs escaping in HTML and encoding in a workflow id (its notifications are found by it).
const wsA = unique('usage <b>:ü & "a"');
const wsB = unique('usage-b');
const adminToken = unique('usage-admin');
const tokenA = unique('usage-a');

const sha = (c: string) => c.repeat(64);
const shared = sha('a');

let pool: Pool;
let temporal: Client;
/** Reads the usage at every request. */
let app: App;
/** Keeps its first reading for an hour. */
let cachingApp: App;

type Attachment = { status: 'pending' | 'downloaded' | 'failed'; sha256?: string; bytes?: number };

async function insertAlbum(key: AlbumKey): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO albums (workspace, provider, account_id, conversation_id, album_id, workflow_id)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.albumId, albumWorkflowId(key)],
  );
  return rows[0]!.id;
}

async function insertMessage(key: MessageKey, albumPk: string | null, attachments: Attachment[]): Promise<void> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO messages (workspace, provider, account_id, conversation_id, message_id, album_pk, raw)
     VALUES ($1, $2, $3, $4, $5, $6, '{}') RETURNING id`,
    [key.workspace, key.provider, key.accountId, key.conversationId, key.messageId, albumPk],
  );
  for (const [position, a] of attachments.entries()) {
    await pool.query(
      `INSERT INTO attachments (message_pk, position, kind, url, status, sha256, bytes) VALUES ($1, $2, 'image', 'https://media.example/x', $3, $4, $5)`,
      [rows[0]!.id, position, a.status, a.sha256 ?? null, a.bytes ?? null],
    );
  }
}

async function insertNotification(workflowId: string, seq: number): Promise<void> {
  await pool.query(`INSERT INTO notifications (id, workflow_id, type, payload) VALUES ($1, $2, 'album.ready', '{}')`, [
    `${workflowId}/${seq}`,
    workflowId,
  ]);
}

const scope = (workspace: string) => ({ workspace, provider: 'whatsapp', accountId: 'acc 1', conversationId: 'conv/1' });
const albumA1 = { ...scope(wsA), albumId: 'alb 1' };
const albumA2 = { ...scope(wsA), albumId: 'alb 2' };
const albumB1 = { ...scope(wsB), albumId: 'alb 1' };
const standaloneA = { ...scope(wsA), messageId: 'single' };

/** What the rows below make, each workspace's media counted per distinct file. */
const expectedA: WorkspaceUsage = {
  workspace: wsA,
  rows: { albums: 2, messages: 5, attachments: 7, events: 2, notifications: 3, quarantine: 1 },
  // The shared file (1000 bytes, three attachments of wsA), 2000 and 500.
  media: { objects: 3, bytes: 3500 },
};
const expectedB: WorkspaceUsage = {
  workspace: wsB,
  rows: { albums: 1, messages: 1, attachments: 2, events: 0, notifications: 0, quarantine: 0 },
  // The file wsA has too counts for wsB as well; a failed attachment's hash counts for nothing.
  media: { objects: 1, bytes: 1000 },
};

beforeAll(async () => {
  const config = testConfig({ DATABASE_URL: await freshDatabase() });
  pool = testPool(config);
  temporal = await testClient(config);
  const deps = {
    config,
    pool,
    temporal,
    wakeDispatcher: () => undefined,
    logger: testLogger(config),
    tokens: new Map([
      [adminToken, ['*']],
      [tokenA, [wsA]],
    ]),
  };
  app = await buildApp({ ...deps, usageMaxAgeMs: 0 });
  cachingApp = await buildApp({ ...deps, usageMaxAgeMs: 3_600_000 });

  const a1 = await insertAlbum(albumA1);
  await insertMessage({ ...scope(wsA), messageId: 'm1' }, a1, [
    { status: 'downloaded', sha256: shared, bytes: 1000 },
    { status: 'downloaded', sha256: sha('b'), bytes: 2000 },
  ]);
  await insertMessage({ ...scope(wsA), messageId: 'm2' }, a1, [{ status: 'downloaded', sha256: shared, bytes: 1000 }]);
  await insertMessage({ ...scope(wsA), messageId: 'm3' }, a1, [{ status: 'failed' }, { status: 'pending' }]);
  const a2 = await insertAlbum(albumA2);
  await insertMessage({ ...scope(wsA), messageId: 'm4' }, a2, [{ status: 'downloaded', sha256: sha('c'), bytes: 500 }]);
  await insertMessage(standaloneA, null, [{ status: 'downloaded', sha256: shared, bytes: 1000 }]);
  for (const id of ['e1', 'e2']) {
    await pool.query(`INSERT INTO events (workspace, source, event_id, raw) VALUES ($1, 'unifyport', $2, '{}')`, [wsA, id]);
  }
  await insertNotification(albumWorkflowId(albumA1), 1);
  await insertNotification(albumWorkflowId(albumA1), 2);
  await insertNotification(messageWorkflowId(standaloneA), 1);
  await pool.query(`INSERT INTO quarantine (workspace, reason, raw) VALUES ($1, 'invalid_json', '\\x7b'::bytea)`, [wsA]);

  const b1 = await insertAlbum(albumB1);
  await insertMessage({ ...scope(wsB), messageId: 'm1' }, b1, [
    { status: 'downloaded', sha256: shared, bytes: 1000 },
    { status: 'failed', sha256: sha('d'), bytes: 9999 },
  ]);
});

afterAll(async () => {
  await cachingApp?.close();
  await app?.close();
  await temporal?.connection.close();
  await pool?.end();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of `/metrics` whose name starts with albumflow_workspace_, labels unescaped. */
async function workspaceSamples(from: App): Promise<Sample[]> {
  const response = await from.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${adminToken}` } });
  expect(response.statusCode).toBe(200);
  const samples: Sample[] = [];
  for (const line of response.body.split('\n')) {
    const match = /^(albumflow_workspace_\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of match[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name!] = value!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The figures a workspace's metrics give, in workspaceUsage's shape. */
function usageFromSamples(samples: Sample[], workspace: string): WorkspaceUsage | undefined {
  const mine = samples.filter((sample) => sample.labels.workspace === workspace);
  if (mine.length === 0) return undefined;
  const one = (name: string) => mine.filter((sample) => sample.name === name).map((sample) => sample.value);
  const rows = Object.fromEntries(
    mine.filter((sample) => sample.name === 'albumflow_workspace_rows').map((sample) => [sample.labels.table!, sample.value]),
  );
  const [objects] = one('albumflow_workspace_media_objects');
  const [bytes] = one('albumflow_workspace_media_bytes');
  return { workspace, rows: rows as WorkspaceUsage['rows'], media: { objects: objects!, bytes: bytes! } };
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** The usage rows of a console page: workspace → its figures as shown. */
function usageOnPage(html: string): Map<string, Record<string, string>> {
  const shown = new Map<string, Record<string, string>>();
  for (const [, workspace, cells] of html.matchAll(/<tr data-usage="([^"]*)">([\s\S]*?)<\/tr>/g)) {
    const figures = Object.fromEntries([...cells!.matchAll(/data-figure="([^"]*)"[^>]*>([^<]*)</g)].map((m) => [m[1]!, m[2]!]));
    shown.set(workspace!, figures);
  }
  return shown;
}

async function page(token: string, url: string): Promise<string> {
  const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}`, accept: 'text/html' } });
  expect(response.statusCode, url).toBe(200);
  return response.body;
}

describe('rows and media per workspace', () => {
  it('counts each table per workspace, and each downloaded file once per workspace', async () => {
    expect(await workspaceUsage(pool)).toEqual([expectedA, expectedB].sort((x, y) => (x.workspace < y.workspace ? -1 : 1)));
  });

  it('exposes them on /metrics, to a token that reaches every workspace only', async () => {
    const samples = await workspaceSamples(app);
    expect(usageFromSamples(samples, wsA)).toEqual(expectedA);
    expect(usageFromSamples(samples, wsB)).toEqual(expectedB);
    expect(new Set(samples.map((sample) => sample.labels.workspace))).toEqual(new Set([wsA, wsB]));
    const scoped = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${tokenA}` } });
    expect(scoped.statusCode).toBe(403);
  });

  it('shows them on the console’s albums list, escaped, for the workspaces in view', async () => {
    const chosen = usageOnPage(await page(tokenA, `/ui?workspace=${encodeURIComponent(wsA)}`));
    expect([...chosen.keys()]).toEqual([escapeHtml(wsA)]);
    expect(chosen.get(escapeHtml(wsA))).toEqual({ albums: '2', messages: '5', 'media-objects': '3', 'media-size': '3.4 KiB' });
    // Without a choice: every workspace the token reaches, and no other.
    expect([...usageOnPage(await page(tokenA, '/ui')).keys()]).toEqual([escapeHtml(wsA)]);
    const all = usageOnPage(await page(adminToken, '/ui'));
    expect(all.get(escapeHtml(wsB))).toEqual({ albums: '1', messages: '1', 'media-objects': '1', 'media-size': '1000 B' });
    expect(all.size).toBe(2);
    // The raw name never reaches the page.
    expect(await page(adminToken, '/ui')).not.toContain(wsA);
    // The review queue lists albums only.
    expect(usageOnPage(await page(adminToken, '/ui/review')).size).toBe(0);
  });

  it('reads the tables again only once a reading is older than its age', async () => {
    expect(usageFromSamples(await workspaceSamples(cachingApp), wsB)).toEqual(expectedB);
    await insertAlbum({ ...scope(wsB), albumId: 'alb 2' });
    // The caching app answers its first reading; the other reads the new album.
    expect(usageFromSamples(await workspaceSamples(cachingApp), wsB)?.rows.albums).toBe(1);
    expect(usageFromSamples(await workspaceSamples(app), wsB)?.rows.albums).toBe(2);
    await pool.query(`DELETE FROM albums WHERE workspace = $1 AND album_id = 'alb 2'`, [wsB]);
  });

  it('drops a workspace from the metrics once it keeps no row', async () => {
    await pool.query(`DELETE FROM attachments a USING messages m WHERE m.id = a.message_pk AND m.workspace = $1`, [wsB]);
    await pool.query(`DELETE FROM messages WHERE workspace = $1`, [wsB]);
    await pool.query(`DELETE FROM albums WHERE workspace = $1`, [wsB]);
    const samples = await workspaceSamples(app);
    expect(samples.filter((sample) => sample.labels.workspace === wsB)).toEqual([]);
    expect(usageFromSamples(samples, wsA)).toEqual(expectedA);
    expect((await workspaceUsage(pool)).map((entry) => entry.workspace)).toEqual([wsA]);
  });
});
