// The fault suite's erasures (docs/design.md, "Data lifetime"): under the suite's load, albums of their own conversations
// are posted with files the media server holds back for seconds, and erased (whole conversations, an
// album, one message of an album that stays) while those downloads are in flight. Afterwards, once the
// collector has run, no object in the store lacks an attachment that references it, and no notification a
// receiver took after an erasure was done carries what it erased.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from '../../src/db/pool.js';
import { albumEvent, webhookRequest } from '../harness/events.js';
import type { ReceivedWebhook } from '../harness/servers/webhook-receiver.js';
import type { ProcessStack } from '../harness/stack.js';
import { unique } from '../harness/random.js';
import { endpointsToken } from './receiver-outage.js';
import { waitFor } from './report.js';

/** How long the media server holds each of these files before it sends the bytes. */
const heldMs = 6_000;

interface Erased {
  what: string;
  /** Captions that must appear in nothing a receiver takes after `doneAt`. */
  captions: string[];
  /** The hashes of the files of what it erased: the store must not keep them. */
  files: string[];
  doneAt: number;
  counts: Record<string, number>;
}

export interface ErasuresUnderLoad {
  erased: Erased[];
  /** Downloads of these albums still in flight when their erasures were asked for. */
  inFlightAtErasure: number;
}

type Stack = Pick<ProcessStack, 'ingressUrls' | 'workspace' | 'secret' | 'media'>;

/** Posts four albums whose files are held back, erases them (or one message) mid-download, and waits for every erasure to be done. */
export async function eraseUnderLoad(stack: Stack): Promise<ErasuresUnderLoad> {
  const base = stack.ingressUrls[0]!;
  const albums = Array.from({ length: 4 }, () => ({ conversationId: unique('conv-erased'), albumId: unique('alb-erased') }));
  const urls: string[] = [];
  const captions = new Map<string, string>();
  const files = new Map<string, string>();
  for (const album of albums) {
    for (const messageId of ['m0', 'm1']) {
      const body = crypto.randomBytes(64 * 1024);
      const url = stack.media.route((_req, res) => {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
        setTimeout(() => res.end(body), heldMs);
      });
      urls.push(url);
      files.set(`${album.albumId}/${messageId}`, crypto.createHash('sha256').update(body).digest('hex'));
      const caption = unique(`a caption to erase ${messageId}`);
      captions.set(`${album.albumId}/${messageId}`, caption);
      const event = albumEvent({
        conversationId: album.conversationId,
        albumId: album.albumId,
        messageId,
        index: messageId === 'm0' ? 0 : 1,
        total: 2,
        text: caption,
        sentAt: new Date().toISOString(),
        attachments: [{ type: 'image', url, mime_type: 'image/jpeg' }],
      });
      const delivery = { route: 'unifyport', workspace: stack.workspace, secret: stack.secret, body: JSON.stringify(event) } as const;
      const { path: route, headers } = webhookRequest(delivery);
      const response = await fetch(`${base}${route}`, { method: 'POST', headers, body: delivery.body });
      if (response.status !== 202) throw new Error(`posting an album to erase answered ${response.status}`);
    }
  }
  // Every file is being fetched (and held back) when the erasures are asked for.
  await waitFor(async () => ({ done: urls.every((url) => stack.media.hits(url) > 0), detail: 'downloads not started' }), 60_000, 200);
  const inFlightAtErasure = stack.media.inFlight();

  const ws = stack.workspace;
  const requests = [
    { what: 'a conversation', path: `conversations/whatsapp/acc_1/${albums[0]!.conversationId}`, erases: ['m0', 'm1'], album: albums[0]! },
    { what: 'a conversation', path: `conversations/whatsapp/acc_1/${albums[1]!.conversationId}`, erases: ['m0', 'm1'], album: albums[1]! },
    {
      what: 'an album',
      path: `albums/whatsapp/acc_1/${albums[2]!.conversationId}/${albums[2]!.albumId}`,
      erases: ['m0', 'm1'],
      album: albums[2]!,
    },
    { what: 'one message of an album', path: `messages/whatsapp/acc_1/${albums[3]!.conversationId}/m1`, erases: ['m1'], album: albums[3]! },
  ];
  const auth = { authorization: `Bearer ${endpointsToken}` };
  const started = await Promise.all(
    requests.map(async (request) => {
      const response = await fetch(`${base}/workspaces/${ws}/${request.path}`, { method: 'DELETE', headers: auth });
      const body = (await response.json()) as { id: string };
      if (response.status !== 202) throw new Error(`erasing ${request.what} answered ${response.status}: ${JSON.stringify(body)}`);
      return { ...request, id: body.id };
    }),
  );
  const erased = await Promise.all(
    started.map(async (request): Promise<Erased> => {
      let counts: Record<string, number> = {};
      const done = await waitFor(
        async () => {
          const response = await fetch(`${base}/workspaces/${ws}/erasures/${request.id}`, { headers: auth });
          const body = (await response.json()) as { state: string; counts: Record<string, number> };
          counts = body.counts;
          return { done: body.state === 'done', detail: `${request.what}: ${body.state}` };
        },
        180_000,
        250,
      );
      if (!done.done) throw new Error(`the erasure of ${request.what} never finished: ${done.detail}`);
      return {
        what: request.what,
        captions: request.erases.map((messageId) => captions.get(`${request.album.albumId}/${messageId}`)!),
        files: request.erases.map((messageId) => files.get(`${request.album.albumId}/${messageId}`)!),
        doneAt: Date.now(),
        counts,
      };
    }),
  );
  return { erased, inFlightAtErasure };
}

/** Every hash of a downloaded file in the directory store under `mediaDir`. */
async function storedObjects(mediaDir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) {
        if (entry.name !== 'thumbnails') await walk(path.join(dir, entry.name));
      } else if (/^[0-9a-f]{64}$/.test(entry.name)) found.push(entry.name);
    }
  };
  await walk(mediaDir);
  return found;
}

/**
 * After the erasures and the collector (retention runs it every few seconds): the queue of objects to
 * collect is empty, every object in the store is referenced by an attachment, and nothing a receiver took
 * after an erasure was done, nor any notification stored, carries what it erased.
 */
export async function checkErasures(input: {
  pool: Pool;
  mediaDir: string;
  erasures: ErasuresUnderLoad;
  received: ReceivedWebhook[];
}): Promise<{ violations: string[]; objects: number; checkedRequests: number; collectedAfterErasure: number }> {
  const violations: string[] = [];
  const collected = await waitFor(
    async () => {
      const { rows } = await input.pool.query<{ queued: number }>(`SELECT count(*)::int AS queued FROM media_garbage`);
      return { done: rows[0]!.queued === 0, detail: `${rows[0]!.queued} objects still queued for the collector` };
    },
    120_000,
    1_000,
  );
  if (!collected.done) violations.push(collected.detail);
  const objects = await storedObjects(input.mediaDir);
  const { rows: unreferenced } = await input.pool.query<{ sha256: string }>(
    `SELECT sha256 FROM unnest($1::text[]) AS o (sha256)
      WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = o.sha256)
        AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.still_sha256 = o.sha256)`,
    [objects],
  );
  for (const { sha256 } of unreferenced) violations.push(`the store holds ${sha256}, which no attachment references`);

  // The erased files: none is in the store; those written by a download that finished after their erasure
  // were collected (the collector remembers each removal).
  const erasedFiles = input.erasures.erased.flatMap((erasure) => erasure.files);
  for (const sha256 of erasedFiles.filter((sha) => objects.includes(sha)))
    violations.push(`the store still holds the erased file ${sha256}`);
  const { rows: removed } = await input.pool.query<{ removed: number }>(
    `SELECT count(*)::int AS removed FROM media_removals WHERE sha256 = ANY($1::text[])`,
    [erasedFiles],
  );

  let checkedRequests = 0;
  for (const erasure of input.erasures.erased) {
    for (const request of input.received.filter((r) => r.receivedAt > erasure.doneAt)) {
      checkedRequests += 1;
      const body = JSON.stringify(request.body);
      for (const caption of erasure.captions) {
        if (body.includes(caption)) {
          violations.push(
            `${request.endpoint} took ${request.body.data.id} after the erasure of ${erasure.what} was done, with its content`,
          );
        }
      }
    }
    const { rows } = await input.pool.query<{ id: string }>(`SELECT id FROM notifications WHERE payload::text LIKE ANY($1::text[])`, [
      erasure.captions.map((caption) => `%${caption}%`),
    ]);
    for (const { id } of rows) violations.push(`the notification ${id} still holds content the erasure of ${erasure.what} removed`);
  }
  return { violations, objects: objects.length, checkedRequests, collectedAfterErasure: removed[0]!.removed };
}
