import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoredScope } from '../../src/domain/types.js';
import type { MessageStatus } from '../../src/http/schemas.js';
import type { AlbumView } from '../../src/domain/types.js';
import { eventually } from '../harness/albums.js';
import { startMediaServer, type MediaServer } from '../harness/servers/media.js';
import { unique } from '../harness/random.js';
import { startStack, type Stack } from '../harness/stack.js';
import { albumEvent } from '../harness/events.js';

let stack: Stack;
let media: MediaServer;
const token = unique('ryw-token');
const authorization = `Bearer ${token}`;
const apiTokens = JSON.stringify({ [token]: ['*'] });

beforeAll(async () => {
  media = await startMediaServer();
});

afterAll(async () => {
  await media.close();
});

async function get<T>(url: string) {
  const response = await stack.app.inject({ method: 'GET', url, headers: { authorization } });
  return { statusCode: response.statusCode, source: String(response.headers['x-albumflow-source']), body: response.json<T>() };
}

const scope = (conversation: string) => `${encodeURIComponent(stack.workspace)}/%s/whatsapp/acc_1/${encodeURIComponent(conversation)}`;
const albumUrl = (conversation: string, album: string) => `/workspaces/${scope(conversation).replace('%s', 'albums')}/${album}`;
const messageUrl = (conversation: string, message: string) => `/workspaces/${scope(conversation).replace('%s', 'messages')}/${message}`;

const childrenPerAlbum = 4;
const readsPerPost = 5;

/** A child of two attachments: one the media server serves, one without a URL (`unavailable`). */
function child(conversation: string, album: string, index: number) {
  return albumEvent({
    conversationId: conversation,
    albumId: album,
    messageId: `${album}-m${index}`,
    index,
    total: childrenPerAlbum,
    attachments: [{ type: 'image', url: media.file(`${album} photo ${index}`) }, { type: 'image' }],
  });
}

/** Other albums posted until `done` resolves, so that the dispatcher and the worker fall behind the ingress. */
async function backgroundLoad(done: Promise<void>): Promise<number> {
  let stop = false;
  void done.then(() => (stop = true));
  let posted = 0;
  await Promise.all(
    [0, 1, 2].map(async (lane) => {
      const conversation = unique('load');
      for (let album = 0; !stop; album++) {
        for (let index = 0; index < childrenPerAlbum && !stop; index++) {
          expect((await stack.post(child(conversation, `load${lane}-${album}`, index))).statusCode).toBe(202);
          posted += 1;
        }
      }
    }),
  );
  return posted;
}

describe('album status reads its own writes', () => {
  beforeAll(async () => {
    stack = await startStack({ QUIET_PERIOD_MS: '2000', MAX_WAIT_MS: '20000', LATE_WINDOW_MS: '2000', API_TOKENS: apiTokens });
  });

  afterAll(async () => {
    await stack.close();
  });

  it('shows every acknowledged child with its attachments on each read after its 202, while the dispatcher and the worker lag', async () => {
    const conversation = unique('ryw');
    const albums = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
    const shortfalls: string[] = [];
    const sources = new Map<string, number>();
    let reads = 0;

    let finished!: () => void;
    const load = backgroundLoad(new Promise<void>((resolve) => (finished = resolve)));
    await Promise.all(
      albums.map(async (album) => {
        for (let index = 0; index < childrenPerAlbum; index++) {
          const messageId = `${album}-m${index}`;
          expect((await stack.post(child(conversation, album, index))).statusCode).toBe(202);
          for (let read = 0; read < readsPerPost; read++) {
            const { statusCode, source, body } = await get<AlbumView>(albumUrl(conversation, album));
            reads += 1;
            sources.set(source, (sources.get(source) ?? 0) + 1);
            expect(statusCode).toBe(200);
            const acknowledged = Array.from({ length: index + 1 }, (_, i) => `${album}-m${i}`);
            const shown = body.children.map((c) => c.messageId);
            const missing = acknowledged.filter((id) => !shown.includes(id));
            const mine = body.children.find((c) => c.messageId === messageId);
            const attachmentsShown = mine?.attachments.map((a) => a.position) ?? [];
            if (
              missing.length > 0 ||
              body.distinctChildren < index + 1 ||
              body.media.total < 2 * (index + 1) ||
              attachmentsShown.join() !== '0,1' ||
              mine?.attachments[1]?.status !== 'unavailable'
            ) {
              shortfalls.push(
                `${album} after ${messageId}: ${shown.length} children (${body.state}, from ${source}), missing ${missing.join(' ')}`,
              );
            }
          }
          const message = await get<MessageStatus>(messageUrl(conversation, messageId));
          expect(message.statusCode).toBe(200);
          expect(message.body.attachments.map((a) => a.position)).toEqual([0, 1]);
        }
      }),
    );
    finished();
    const loadPosted = await load;

    expect(reads).toBe(albums.length * childrenPerAlbum * readsPerPost);
    expect(loadPosted).toBeGreaterThan(0);
    // The reads ran while workflows were running: the workflow's answer is among them.
    expect(sources.get('workflow') ?? 0).toBeGreaterThan(0);
    expect(shortfalls, `${shortfalls.length} of ${reads} reads showed fewer than acknowledged`).toEqual([]);

    // Once the workflows have seen every child, the view is theirs and shows the same children.
    for (const album of albums) {
      const settled = await eventually(async () => {
        const response = await get<AlbumView>(albumUrl(conversation, album));
        expect(response.body.decisions).toHaveLength(1);
        return response.body;
      });
      expect(settled.children.map((c) => c.messageId)).toEqual(Array.from({ length: childrenPerAlbum }, (_, i) => `${album}-m${i}`));
    }
  });
});

describe('album status while the workflow loads the album', () => {
  /** The albums whose stored state a run began to load, in order; while `held` is set, the load waits for it. */
  const loads: string[] = [];
  let held: { promise: Promise<void>; release: () => void } | null = null;
  const hold = () => {
    let release!: () => void;
    const promise = new Promise<void>((resolve) => (release = resolve));
    held = { promise, release };
  };
  const releaseLoads = () => {
    held?.release();
    held = null;
  };
  const loadsOf = (album: string) => loads.filter((id) => id === album).length;

  /**
   * The first read the album's latest run answers while it loads the album's stored state. A local
   * activity keeps the run's first workflow task open, and a query waits for the task to complete; one
   * that outlasts most of the task's timeout lets the task complete all the same (the SDK's task
   * heartbeat), and the run answers the queries that waited with what it holds before the load. Reads
   * whose query waited longer than the API's deadline are answered from PostgreSQL, and are retried.
   */
  async function readWhileLoading(conversation: string, album: string, runs: number) {
    await eventually(() => expect(loadsOf(album)).toBe(runs));
    const read = await eventually(async () => {
      const response = await get<AlbumView>(albumUrl(conversation, album));
      expect(response.source).toBe('workflow');
      return response.body;
    }, 90_000);
    expect(loadsOf(album)).toBe(runs);
    expect(held).not.toBeNull();
    return read;
  }

  beforeAll(async () => {
    stack = await startStack(
      { QUIET_PERIOD_MS: '300', MAX_WAIT_MS: '3000', LATE_WINDOW_MS: '500', API_TOKENS: apiTokens },
      {
        activities: (real) => ({
          ...real,
          async loadPrior(scope: StoredScope) {
            loads.push(scope.kind === 'album' ? scope.key.albumId : scope.key.messageId);
            await held?.promise;
            return real.loadPrior(scope);
          },
        }),
      },
    );
  });

  afterEach(releaseLoads);

  afterAll(async () => {
    await stack.close();
  });

  it('shows the stored children, not an empty album, while the first workflow task loads a new album', { timeout: 180_000 }, async () => {
    const conversation = unique('load');
    hold();
    expect((await stack.post(child(conversation, 'fresh', 0))).statusCode).toBe(202);
    const live = await readWhileLoading(conversation, 'fresh', 1);
    expect(live.children.map((c) => c.messageId)).toEqual(['fresh-m0']);
    expect(live.children[0]!.attachments.map((a) => [a.position, a.status])).toEqual([
      [0, 'pending'],
      [1, 'unavailable'],
    ]);
    expect(live).toMatchObject({ state: 'collecting', distinctChildren: 1, expectedTotal: childrenPerAlbum });
    expect(live).toEqual((await get<AlbumView>(`${albumUrl(conversation, 'fresh')}?source=database`)).body);
    releaseLoads();

    const loaded = await eventually(async () => {
      const response = await get<AlbumView>(albumUrl(conversation, 'fresh'));
      expect(response.body.media.pending).toBe(0);
      return response.body;
    });
    expect(loaded.children.map((c) => c.messageId)).toEqual(['fresh-m0']);
  });

  it(
    'shows the stored children and decisions while the run a late child started loads the closed album',
    { timeout: 180_000 },
    async () => {
      const conversation = unique('late');
      const late = (index: number) =>
        albumEvent({ conversationId: conversation, albumId: 'late', messageId: `late-m${index}`, index, total: 1 });
      expect((await stack.post(late(0))).statusCode).toBe(202);
      const closed = await eventually(async () => {
        const response = await get<AlbumView>(albumUrl(conversation, 'late'));
        expect(response.source).toBe('database');
        expect(response.body.state).toBe('closed');
        return response.body;
      });
      expect(closed.decisions.map((d) => d.trigger)).toEqual(['expected_count_reached']);

      hold();
      expect((await stack.post(late(1))).statusCode).toBe(202);
      const live = await readWhileLoading(conversation, 'late', 2);
      expect(live.children.map((c) => c.messageId)).toEqual(['late-m0', 'late-m1']);
      expect(live.decisions).toEqual(closed.decisions);
      const recorded = (await get<AlbumView>(`${albumUrl(conversation, 'late')}?source=database`)).body;
      expect(live).toEqual({ ...recorded, state: 'processed' });
      releaseLoads();

      const amended = await eventually(async () => {
        const response = await get<AlbumView>(albumUrl(conversation, 'late'));
        expect(response.body.decisions.map((d) => d.trigger)).toEqual(['expected_count_reached', 'late_item']);
        return response.body;
      });
      expect(amended.children.map((c) => c.messageId)).toEqual(['late-m0', 'late-m1']);
    },
  );
});
