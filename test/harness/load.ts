// The load generator of the bench and the fault suite: signed webhooks (events.ts) over keep-alive HTTP
// with bounded concurrency. The bench drives it one phase at a time, in an open loop (a schedule of
// requests per second) or a closed loop (as fast as the server answers), recording every request's
// timings; the fault suite runs it continuously, albums per second, retrying each child until an ingress
// acknowledges it, and records every attempt with the phase (the fault) it was sent in.
import crypto from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { albumKeyString, childKeyString } from '../../src/domain/keys.js';
import { committedStatus, telegramMessage, telegramUpdate, unifyportEvent, webhookRequest, type Delivery } from './events.js';

/** Posts one webhook on a keep-alive agent; rejects when no answer comes (connection refused or reset, timeout). */
function post(agent: http.Agent, baseUrl: string, delivery: Delivery, timeoutMs: number): Promise<{ status: number; text: string }> {
  const { path, headers } = webhookRequest(delivery);
  const body = delivery.body;
  return new Promise((resolve, reject) => {
    const request = http.request(
      new URL(path, baseUrl),
      { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, timeout: timeoutMs },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no response within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** A bot of TELEGRAM_BOTS[workspace] whose webhook the load posts Telegram Updates to, with its secret token. */
export interface TelegramBot {
  bot: string;
  secretToken: string;
}

/** A channel of LINE_CHANNELS[workspace] whose webhook the load posts LINE webhook bodies to, with its channel secret. */
export interface LineChannel {
  channel: string;
  channelSecret: string;
}

/** Where a phase's load goes and how fast. */
export interface PhaseOptions {
  /** Base URL of the server under test (the ingress or the ceiling). */
  url: string;
  workspace: string;
  secret: string;
  /** Post to this bot's Telegram webhook (the traffic then holds Telegram Updates) instead of the UnifyPort route. */
  telegram?: TelegramBot;
  /** Post to this channel's LINE webhook (the traffic then holds LINE webhook bodies) instead. */
  line?: LineChannel;
  /** Requests per second, or null for a closed loop (as fast as the server answers). */
  rate: number | null;
  durationMs: number;
  /** Requests in flight at once (and keep-alive sockets). */
  concurrency: number;
  /** Safety stop: no new request after this long (albums may then stay incomplete). */
  hardStopMs: number;
}

/** One request of a phase's traffic: its body and the child it delivers. */
export interface ChildRequest {
  body: string;
  albumId: string;
  messageId: string;
  /** Children of the album and whether they carry `album.total`. */
  albumSize: number;
  albumHasTotal: boolean;
  redelivery: boolean;
  /** A Telegram Update's or LINE body's album key (their answer does not name it); null for UnifyPort events, whose 202 names it. */
  albumKey: string | null;
}

/** Requests sent at the same intended instant. */
export type Unit = ChildRequest[];

/** A phase's requests, produced as they are sent: `next(true)` only finishes the albums already begun, then answers null. */
export interface Traffic {
  next(finishing: boolean): Unit | null;
  readonly albumsCreated: number;
}

/** One request. Times are epoch milliseconds with sub-millisecond precision. */
export interface RequestRecord {
  albumId: string;
  messageId: string;
  albumSize: number;
  albumHasTotal: boolean;
  redelivery: boolean;
  /** When the schedule wanted it sent; equal to sentAt in a closed loop. */
  intendedAt: number;
  sentAt: number;
  ackAt: number;
  /** HTTP status, or 0 when no response came (connection error, timeout). */
  status: number;
  /** Committed: a 202 from the UnifyPort route, a 200 from the Telegram and LINE routes. */
  accepted: boolean;
  /** From a 202 body: the child was already stored; for a Telegram Update or a LINE body (no such answer), whether it was a redelivery. */
  duplicate: boolean | null;
  albumKey: string | null;
  error?: string;
}

export interface PhaseResult {
  records: RequestRecord[];
  albumsCreated: number;
  /** The hard stop cut the phase short. */
  truncated: boolean;
}

const phaseRequestTimeoutMs = 30_000;

function now(): number {
  return performance.timeOrigin + performance.now();
}

/** A counting semaphore whose waiters are served in arrival order. */
class Slots {
  private free: number;
  private readonly waiters: Array<() => void> = [];
  constructor(count: number) {
    this.free = count;
  }
  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }
}

/** Sends one phase's traffic and answers every request's record once the last one was answered. */
export async function runPhase(phase: PhaseOptions, traffic: Traffic): Promise<PhaseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: phase.concurrency });
  const { telegram, line, workspace } = phase;
  const records: RequestRecord[] = [];
  const slots = new Slots(phase.concurrency);
  const inFlight = new Set<Promise<void>>();
  const start = now();
  let truncated = false;

  const send = async (request: ChildRequest, intendedAt: number) => {
    const sentAt = now();
    const delivery: Delivery = telegram
      ? { route: 'telegram', workspace, bot: telegram.bot, secretToken: telegram.secretToken, body: request.body }
      : line
        ? { route: 'line', workspace, channel: line.channel, channelSecret: line.channelSecret, body: request.body }
        : { route: 'unifyport', workspace, secret: phase.secret, body: request.body };
    const record: RequestRecord = {
      albumId: request.albumId,
      messageId: request.messageId,
      albumSize: request.albumSize,
      albumHasTotal: request.albumHasTotal,
      redelivery: request.redelivery,
      intendedAt,
      sentAt,
      ackAt: 0,
      status: 0,
      accepted: false,
      duplicate: null,
      albumKey: null,
    };
    try {
      const response = await post(agent, phase.url, delivery, phaseRequestTimeoutMs);
      record.ackAt = now();
      record.status = response.status;
      if (response.status === committedStatus[delivery.route]) {
        record.accepted = true;
        if (delivery.route !== 'unifyport') {
          record.duplicate = request.redelivery;
          record.albumKey = request.albumKey;
        } else {
          const body = JSON.parse(response.text) as { duplicate?: boolean; albumKey?: string | null };
          record.duplicate = body.duplicate ?? null;
          record.albumKey = body.albumKey ?? null;
        }
      }
    } catch (err) {
      record.ackAt = now();
      record.error = (err as Error).message;
    }
    records.push(record);
  };

  const launch = (request: ChildRequest, intendedAt: number) => {
    const task = send(request, intendedAt).finally(() => {
      slots.release();
      inFlight.delete(task);
    });
    inFlight.add(task);
  };

  if (phase.rate === null) {
    const lane = async () => {
      for (;;) {
        const elapsed = now() - start;
        if (elapsed > phase.hardStopMs) {
          truncated = true;
          return;
        }
        const unit = traffic.next(elapsed >= phase.durationMs);
        if (!unit) return;
        for (const request of unit) {
          await slots.acquire();
          launch(request, now());
        }
      }
    };
    await Promise.all(Array.from({ length: phase.concurrency }, lane));
  } else {
    const intervalMs = 1000 / phase.rate;
    let scheduled = 0;
    for (;;) {
      const intendedAt = start + scheduled * intervalMs;
      if (now() - start > phase.hardStopMs) {
        truncated = true;
        break;
      }
      const unit = traffic.next(intendedAt - start >= phase.durationMs);
      if (!unit) break;
      const wait = intendedAt - now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      for (const request of unit) {
        await slots.acquire();
        launch(request, intendedAt);
      }
      scheduled += unit.length;
    }
  }
  await Promise.all(inFlight);
  agent.destroy();
  return { records, albumsCreated: traffic.albumsCreated, truncated };
}

/** One child message the load generator sends until an ingress acknowledges it (as a webhook sender retries). */
export interface SentChild {
  childKey: string;
  albumKey: string | null;
  messageId: string;
  /** Null when the child's attachment was sent without a URL (`unavailable`, nothing to download). */
  attachmentPath: string | null;
  /** A Telegram child's file, downloaded through the fake Bot API's getFile (it has no URL). */
  telegramFileId: string | null;
  /** The caption a Telegram edit of the child set, once that edit was acknowledged too. */
  editedCaption: string | null;
  /** Phase of the first acknowledgement, null while unacknowledged. */
  ackedIn: string | null;
  acked: boolean;
  /** A 4xx answer, never retried (valid traffic must not get one). */
  refusedWith: number | null;
}

export interface Attempt {
  childKey: string;
  phase: string;
  at: number;
  /** HTTP status, or 0 when no answer came (connection refused or reset). */
  status: number;
  /** A 202 (UnifyPort) or a 200 (Telegram): the delivery is committed. */
  acknowledged: boolean;
  /** The row the 202 names (a 202 for the wrong child is a failure of its own). */
  answeredKey?: string;
}

/** A delivery the continuous generator keeps until it is acknowledged (or refused). */
interface Queued {
  child: SentChild;
  body: string;
  dueAt: number;
  retries: number;
  /** Posted to the Telegram route (answered 200) rather than UnifyPort's (202). */
  telegram: boolean;
  /** The edit's caption when this delivery is an edit of the child. */
  edit?: string | null;
}

export interface AlbumShape {
  size: number;
  standalone: boolean;
  withTotal: boolean;
  /** Deliveries are spread over this long (ms). */
  spreadMs?: number;
  /** Share of the children delivered twice. */
  redeliveryRate?: number;
  /** Only every n-th child's attachment has a URL (default: every child's). */
  mediaEvery?: number;
}

/** A bot of TELEGRAM_BOTS[workspace] whose webhook gets a share of the albums as Telegram Updates. */
export interface TelegramTarget extends TelegramBot {
  botId: string;
  /** Share of the generated albums sent as Telegram albums. */
  share: number;
  /** Makes the fake Bot API serve this file to the bot. */
  serveFile: (fileId: string) => void;
}

export interface LoadOptions {
  workspace: string;
  secret: string;
  telegram?: TelegramTarget;
  /** Ingress base URLs; requests go round-robin. */
  targets: string[];
  /** Builds the attachment URL of a media path. */
  mediaUrl: (path: string) => string;
  albumsPerSecond: number;
  maxInFlight: number;
}

const chance = (p: number) => Math.random() < p;

/**
 * Signed UnifyPort traffic: albums of 1–10 children (half of them with a total), standalone messages,
 * deliveries shuffled and spread over a second and a half, a fifth of them redelivered (same or new event
 * id). With a Telegram bot, a share of the albums are Telegram Updates instead (no total, numeric
 * message ids, files behind getFile, redeliveries with the same update_id, a caption edit of some).
 * Every child is retried until it is acknowledged; every attempt is recorded with the phase it was sent in.
 */
export class LoadGenerator {
  readonly children = new Map<string, SentChild>();
  readonly attempts: Attempt[] = [];
  phase = 'warm-up';
  private readonly queue: Queued[] = [];
  private inFlight = 0;
  private next = 0;
  private albums = 0;
  private nextUpdateId = 1;
  private generating: NodeJS.Timeout | undefined;
  private pumping: NodeJS.Timeout | undefined;
  private readonly run = crypto.randomBytes(3).toString('hex');
  private readonly agent: http.Agent;

  private secret: string;

  constructor(private readonly options: LoadOptions) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: options.maxInFlight });
    this.secret = options.secret;
  }

  /** Signs every delivery sent from now on (retries too) with this secret, as a sender does once it rotated. */
  useSecret(secret: string): void {
    this.secret = secret;
  }

  start(): void {
    const tickMs = 100;
    let credit = 0;
    this.generating = setInterval(() => {
      credit += (this.options.albumsPerSecond * tickMs) / 1000;
      for (; credit >= 1; credit -= 1) {
        const standalone = chance(0.1);
        const size = standalone ? 1 : 1 + crypto.randomInt(10);
        if (this.options.telegram && chance(this.options.telegram.share)) this.addTelegramAlbum({ size, standalone });
        else this.addAlbum({ size, standalone, withTotal: !standalone && chance(0.5) });
      }
    }, tickMs);
    this.pumping = setInterval(() => this.pump(), 20);
  }

  stopGenerating(): void {
    clearInterval(this.generating);
  }

  unacknowledged(): number {
    let count = 0;
    for (const child of this.children.values()) if (!child.acked && child.refusedWith === null) count += 1;
    return count;
  }

  pendingDeliveries(): number {
    return this.queue.length + this.inFlight;
  }

  /** Waits until every delivery was sent and answered (redeliveries included), then stops. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pendingDeliveries() > 0 || this.unacknowledged() > 0) {
      if (Date.now() > deadline) {
        const recent = this.attempts.filter((a) => a.at > Date.now() - 10_000);
        const counts = new Map<number, number>();
        for (const attempt of recent) counts.set(attempt.status, (counts.get(attempt.status) ?? 0) + 1);
        const statuses = [...counts].map(([status, n]) => `${status}×${n}`);
        throw new Error(
          `load did not drain: ${this.unacknowledged()} children unacknowledged; answers of the last 10 s: ${statuses.join(', ')}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    this.stop();
  }

  stop(): void {
    clearInterval(this.generating);
    clearInterval(this.pumping);
    this.agent.destroy();
  }

  /** Queues the children of one album (or one standalone message) for delivery within `spreadMs`. */
  addAlbum(shape: AlbumShape): void {
    const { size, standalone, withTotal, spreadMs = 1_500, redeliveryRate = 0.2, mediaEvery = 1 } = shape;
    const number = this.albums++;
    const now = Date.now();
    const account = `acc-${number % 7}`;
    const conversation = `conv-${this.run}-${number}`;
    const scope = { workspace: this.options.workspace, provider: 'whatsapp', accountId: account, conversationId: conversation };
    const albumId = `alb-${number}`;
    const albumKey = standalone ? null : albumKeyString({ ...scope, albumId });
    const order = Array.from({ length: size }, (_, index) => index).sort(() => Math.random() - 0.5);
    for (const index of order) {
      const messageId = `m-${number}-${index}`;
      const attachmentPath = index % mediaEvery === 0 ? `/media/${this.run}/${number}/${index}.jpg` : null;
      const child: SentChild = {
        childKey: childKeyString({ ...scope, messageId }),
        albumKey,
        messageId,
        attachmentPath,
        telegramFileId: null,
        editedCaption: null,
        ackedIn: null,
        acked: false,
        refusedWith: null,
      };
      this.children.set(child.childKey, child);
      const event = (id: string) =>
        JSON.stringify(
          unifyportEvent({
            id,
            accountId: account,
            conversationId: conversation,
            message: {
              id: messageId,
              text: index === 0 ? `album ${number}` : undefined,
              sent_at: new Date(now + index).toISOString(),
              attachments: [
                { type: 'image', ...(attachmentPath ? { url: this.options.mediaUrl(attachmentPath) } : {}), mime_type: 'image/jpeg' },
              ],
              album: standalone ? undefined : { id: albumId, index, ...(withTotal ? { total: size } : {}) },
            },
          }),
        );
      const eventId = `evt-${this.run}-${number}-${index}`;
      const dueAt = now + crypto.randomInt(spreadMs + 1);
      this.queue.push({ child, body: event(eventId), dueAt, retries: 0, telegram: false });
      if (chance(redeliveryRate)) {
        const again = chance(0.5) ? eventId : `${eventId}-again`;
        this.queue.push({ child, body: event(again), dueAt: dueAt + crypto.randomInt(3_000), retries: 0, telegram: false });
      }
    }
  }

  /**
   * Queues a Telegram album (or a standalone photo) as its bot's webhook receives it: one chat of its
   * own, message ids 1…size, a photo each; a fifth redelivered with the same update_id; a third of the
   * albums get an edit of their first item's caption a few seconds later.
   */
  addTelegramAlbum({ size, standalone, spreadMs = 1_500 }: { size: number; standalone: boolean; spreadMs?: number }): void {
    const telegram = this.options.telegram!;
    const number = this.albums++;
    const now = Date.now();
    const chatId = 1_000_000 + number;
    const scope = { workspace: this.options.workspace, provider: 'telegram', accountId: telegram.botId, conversationId: String(chatId) };
    const group = `g-${this.run}-${number}`;
    const albumKey = standalone ? null : albumKeyString({ ...scope, albumId: group });
    const date = Math.floor(now / 1000);
    const message = (messageId: number, caption: string | null, fileId: string) =>
      telegramMessage({
        messageId,
        chatId,
        date,
        mediaGroupId: standalone ? undefined : group,
        photo: { fileId, width: 1280, height: 960 },
        caption,
      });
    const edited = !standalone && chance(1 / 3);
    for (let messageId = 1; messageId <= size; messageId++) {
      const fileId = `f-${this.run}-${number}-${messageId}`;
      telegram.serveFile(fileId);
      const caption = messageId === 1 ? `album ${number}` : null;
      const child: SentChild = {
        childKey: childKeyString({ ...scope, messageId: String(messageId) }),
        albumKey,
        messageId: String(messageId),
        attachmentPath: null,
        telegramFileId: fileId,
        editedCaption: null,
        ackedIn: null,
        acked: false,
        refusedWith: null,
      };
      this.children.set(child.childKey, child);
      const updateId = this.nextUpdateId++;
      const body = JSON.stringify(telegramUpdate(updateId, message(messageId, caption, fileId)));
      const dueAt = now + crypto.randomInt(spreadMs + 1);
      this.queue.push({ child, body, dueAt, retries: 0, telegram: true });
      if (chance(0.2)) this.queue.push({ child, body, dueAt: dueAt + crypto.randomInt(3_000), retries: 0, telegram: true });
      if (edited && messageId === 1) {
        const editCaption = `album ${number} (edited)`;
        const edit = { ...message(messageId, editCaption, fileId), edit_date: date + 60 };
        const editBody = JSON.stringify(telegramUpdate(this.nextUpdateId++, edit, 'edited_message'));
        this.queue.push({
          child,
          body: editBody,
          dueAt: now + spreadMs + crypto.randomInt(4_000),
          retries: 0,
          telegram: true,
          edit: editCaption,
        });
      }
    }
  }

  private pump(): void {
    const now = Date.now();
    this.queue.sort((a, b) => a.dueAt - b.dueAt);
    while (this.inFlight < this.options.maxInFlight && this.queue[0] && this.queue[0].dueAt <= now) {
      const queued = this.queue.shift()!;
      this.inFlight += 1;
      void this.send(queued).finally(() => {
        this.inFlight -= 1;
      });
    }
  }

  private async send(queued: Queued): Promise<void> {
    const { workspace, telegram } = this.options;
    const secret = this.secret;
    const target = this.options.targets[this.next++ % this.options.targets.length]!;
    const attempt: Attempt = { childKey: queued.child.childKey, phase: this.phase, at: Date.now(), status: 0, acknowledged: false };
    this.attempts.push(attempt);
    try {
      const delivery: Delivery = queued.telegram
        ? { route: 'telegram', workspace, bot: telegram!.bot, secretToken: telegram!.secretToken, body: queued.body }
        : { route: 'unifyport', workspace, secret, body: queued.body };
      const response = await post(this.agent, target, delivery, 20_000);
      attempt.status = response.status;
      if (response.status === committedStatus[delivery.route]) {
        attempt.acknowledged = true;
        if (!queued.telegram) attempt.answeredKey = answeredKey(response.text);
        if (queued.edit !== undefined) queued.child.editedCaption = queued.edit;
        else if (!queued.child.acked) {
          queued.child.acked = true;
          queued.child.ackedIn = attempt.phase;
        }
        return;
      }
      // Valid traffic is never refused: a 4xx is a finding, and retrying would not change it.
      if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
        queued.child.refusedWith = response.status;
        return;
      }
    } catch {
      attempt.status = 0;
    }
    queued.retries += 1;
    queued.dueAt = Date.now() + Math.min(5_000, 250 * 2 ** Math.min(queued.retries, 5));
    this.queue.push(queued);
  }
}

/** The child key a 202 names, if its body says. */
function answeredKey(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { childKey?: string }).childKey;
  } catch {
    return undefined;
  }
}
