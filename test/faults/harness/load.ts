import crypto from 'node:crypto';
import { signatureHeader } from '../../../src/common/signature.js';
import { albumKeyString, childKeyString } from '../../../src/domain/keys.js';

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

interface Delivery {
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
export interface TelegramTarget {
  bot: string;
  botId: string;
  secretToken: string;
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
  private readonly queue: Delivery[] = [];
  private inFlight = 0;
  private next = 0;
  private albums = 0;
  private nextUpdateId = 1;
  private generating: NodeJS.Timeout | undefined;
  private pumping: NodeJS.Timeout | undefined;
  private readonly run = crypto.randomBytes(3).toString('hex');

  constructor(private readonly options: LoadOptions) {}

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
    clearInterval(this.pumping);
  }

  stop(): void {
    clearInterval(this.generating);
    clearInterval(this.pumping);
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
        JSON.stringify({
          id,
          type: 'message.received',
          provider: 'whatsapp',
          account_id: account,
          data: {
            conversation: { id: conversation },
            message: {
              id: messageId,
              ...(index === 0 ? { text: `album ${number}` } : {}),
              sent_at: new Date(now + index).toISOString(),
              attachments: [
                { type: 'image', ...(attachmentPath ? { url: this.options.mediaUrl(attachmentPath) } : {}), mime_type: 'image/jpeg' },
              ],
              ...(standalone ? {} : { album: { id: albumId, index, ...(withTotal ? { total: size } : {}) } }),
            },
          },
        });
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
    const message = (messageId: number, caption: string | null, fileId: string) => ({
      message_id: messageId,
      chat: { id: chatId, type: 'private' },
      date,
      ...(standalone ? {} : { media_group_id: group }),
      photo: [{ file_id: fileId, file_unique_id: `u-${fileId}`, width: 1280, height: 960 }],
      ...(caption === null ? {} : { caption }),
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
      const body = JSON.stringify({ update_id: updateId, message: message(messageId, caption, fileId) });
      const dueAt = now + crypto.randomInt(spreadMs + 1);
      this.queue.push({ child, body, dueAt, retries: 0, telegram: true });
      if (chance(0.2)) this.queue.push({ child, body, dueAt: dueAt + crypto.randomInt(3_000), retries: 0, telegram: true });
      if (edited && messageId === 1) {
        const editCaption = `album ${number} (edited)`;
        const edit = { ...message(messageId, editCaption, fileId), edit_date: date + 60 };
        const editBody = JSON.stringify({ update_id: this.nextUpdateId++, edited_message: edit });
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
      const delivery = this.queue.shift()!;
      this.inFlight += 1;
      void this.send(delivery).finally(() => {
        this.inFlight -= 1;
      });
    }
  }

  /** The request of one delivery: UnifyPort's signed with the workspace secret, Telegram's with the bot's secret token. */
  private request(delivery: Delivery, target: string): { url: string; headers: Record<string, string> } {
    const { workspace, secret, telegram } = this.options;
    if (delivery.telegram) {
      return {
        url: `${target}/webhooks/telegram/${workspace}/${telegram!.bot}`,
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': telegram!.secretToken },
      };
    }
    const timestamp = String(Math.floor(Date.now() / 1000));
    return {
      url: `${target}/webhooks/unifyport/${workspace}`,
      headers: {
        'content-type': 'application/json',
        'x-unifyport-timestamp': timestamp,
        'x-unifyport-signature': signatureHeader(secret, timestamp, delivery.body),
      },
    };
  }

  private async send(delivery: Delivery): Promise<void> {
    const target = this.options.targets[this.next++ % this.options.targets.length]!;
    const attempt: Attempt = { childKey: delivery.child.childKey, phase: this.phase, at: Date.now(), status: 0, acknowledged: false };
    this.attempts.push(attempt);
    try {
      const { url, headers } = this.request(delivery, target);
      const response = await fetch(url, { method: 'POST', headers, body: delivery.body, signal: AbortSignal.timeout(20_000) });
      attempt.status = response.status;
      const answer = (await response.json().catch(() => ({}))) as { childKey?: string };
      if (response.status === (delivery.telegram ? 200 : 202)) {
        attempt.acknowledged = true;
        if (!delivery.telegram) attempt.answeredKey = answer.childKey;
        if (delivery.edit !== undefined) delivery.child.editedCaption = delivery.edit;
        else if (!delivery.child.acked) {
          delivery.child.acked = true;
          delivery.child.ackedIn = attempt.phase;
        }
        return;
      }
      // Valid traffic is never refused: a 4xx is a finding, and retrying would not change it.
      if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
        delivery.child.refusedWith = response.status;
        return;
      }
    } catch {
      attempt.status = 0;
    }
    delivery.retries += 1;
    delivery.dueAt = Date.now() + Math.min(5_000, 250 * 2 ** Math.min(delivery.retries, 5));
    this.queue.push(delivery);
  }
}
